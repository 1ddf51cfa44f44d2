"""The report in a real headless Chromium: from the leaderboard to a failing sample's error message, the
filters, hostile text staying text, and no sideways scrolling on a phone (issue 14, acceptance 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser import Browser, chromium_path  # noqa: E402
from report_fixture import HOSTILE_ERROR, LONG_NAME, build  # noqa: E402
from sandbox import detect_isolation  # noqa: E402

pytestmark = [
    pytest.mark.skipif(chromium_path() is None, reason="chromium not installed (Debian: apt-get install chromium)"),
    pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap to make the runs"),
]


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def browser():
    with Browser() as instance:
        yield instance


def test_click_through_to_a_failing_samples_error_message(board: Path, browser: Browser):
    browser.set_width(1400)
    browser.open((board / "index.html").as_uri())
    # the long model name is whole at 1,400 px: not cut, not ellipsised
    name = browser.js(f"Array.from(document.querySelectorAll('#board a.run-link')).find(a => a.textContent === "
                      f"{LONG_NAME!r}) !== undefined")
    assert name
    widths = browser.js("Array.from(document.querySelectorAll('#board a.run-link'))"
                        ".map(a => [a.scrollWidth, a.clientWidth, a.parentElement.scrollWidth <= a.parentElement.clientWidth])")
    assert all(fits for _, _, fits in widths)
    browser.click("#board a.run-link[href$='runs/tiny/report.html']")  # the long-named model
    browser.wait_for("location.pathname.endsWith('/runs/tiny/report.html') && document.body.dataset.ready")
    assert browser.js("document.querySelector('h1').textContent").startswith(LONG_NAME)
    browser.click("#filters button[data-filter='failed']")
    visible = browser.js("Array.from(document.querySelectorAll('details.sample')).filter(d => !d.hidden)"
                         ".map(d => d.dataset.status)")
    assert visible and set(visible) == {"failed"}
    assert browser.js("location.hash") == "#filter=failed"
    browser.click("details.sample[data-problem='HumanEval/1']:not([hidden]) summary")
    assert browser.js("document.querySelector(\"details.sample[data-problem='HumanEval/1']\").open")
    error = browser.js("document.querySelector(\"details.sample[data-problem='HumanEval/1'] pre.sample-error\").innerText")
    assert "ValueError" in error and HOSTILE_ERROR in error  # the sample's own message, as text
    assert browser.js("document.querySelectorAll('img').length") == 0  # ... never markup
    assert browser.js("document.querySelectorAll('script').length") == 1
    # the other filters
    browser.click("#filters button[data-filter='timed out']")
    assert browser.js("Array.from(document.querySelectorAll('details.sample')).filter(d => !d.hidden)"
                      ".map(d => d.id)") == ["s-HumanEval/2-0"]


def test_a_failed_samples_page_shows_where_it_failed(board: Path, browser: Browser):
    """The trusted checker's failure detail (issue 23): the assertion, the call's arguments, what came back."""
    browser.set_width(1400)
    browser.open((board / "../runs/tiny/report.html").resolve().as_uri())
    browser.wait_for("document.body.dataset.ready")
    browser.click("#filters button[data-filter='failed']")
    browser.click("details.sample[id='s-HumanEval/0-0'] summary")  # "return None": a wrong answer
    detail = browser.js("document.getElementById('s-HumanEval/0-0').querySelector('dl.failure-detail').innerText")
    assert "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True" in detail
    assert "has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3)" in detail
    assert "None" in detail
    browser.click("details.sample[id='s-HumanEval/1-0'] summary")  # raises
    raised = browser.js("document.getElementById('s-HumanEval/1-0').querySelector('dl.failure-detail').innerText")
    assert "separate_paren_groups(" in raised and "raised ValueError" in raised
    assert browser.js("document.querySelectorAll('img').length") == 0


def test_side_by_side_names_problems_one_model_solves(board: Path, browser: Browser):
    browser.set_width(1400)
    browser.open((board / "index.html").as_uri())
    tally = browser.js("document.querySelector('#cmp-out .tally').innerText")
    assert "only A solves" in tally and "problems compared" in tally
    rows = browser.js("Array.from(document.querySelectorAll('#cmp-out tbody tr')).map(r => r.innerText)")
    assert rows and all("only" in row for row in rows)


@pytest.mark.parametrize("width", [360, 390])
@pytest.mark.parametrize("page", ["index.html", "../runs/tiny/report.html"])
def test_no_sideways_scrolling_on_a_phone(board: Path, browser: Browser, width: int, page: str):
    browser.set_width(width)
    browser.open((board / page).resolve().as_uri())
    assert browser.js("document.documentElement.scrollWidth") <= width
