"""The report in a real headless Chromium: from the leaderboard to a failing sample's error message, the
filters, hostile text staying text, and no sideways scrolling on a phone (acceptance 1)."""

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
    """The trusted checker's failure detail: the assertion, the call's arguments, what came back."""
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


# -- five pass@k columns and long names on a laptop screen ---------------------------------------

WIDE_KS = (1, 5, 10, 20, 100)
WIDE_NAMES = (LONG_NAME, "bigcode/starcoder2-15b-instruct-v0.1-preview-with-an-unusually-long-suffix",
              "Qwen/Qwen2.5-Coder-32B-Instruct-AWQ-4bit-group-size-128_calibrated_on_the_stack", "tiny")


@pytest.fixture(scope="module")
def wide_board(tmp_path_factory) -> Path:
    """A leaderboard whose entries have pass@1, 5, 10, 20 and 100 (n=100), long names, one partial run."""
    from evalsuite.records import SampleResult, SamplingParams
    from evalsuite.reporting.entries import entry_from_run
    from evalsuite.reporting.publish import update_leaderboard
    from evalsuite.scoring import score

    folder = tmp_path_factory.mktemp("wide") / "leaderboard"
    entries = []
    for index, name in enumerate(WIDE_NAMES + (WIDE_NAMES[1],)):
        passes = [(7 * index + 13 * problem) % 101 for problem in range(6)]
        results = [SampleResult(f"humaneval/{p}", j, j < c, "passed" if j < c else "failed: x", 0.01)
                   for p, c in enumerate(passes) for j in range(100)]
        partial = index == len(WIDE_NAMES)
        page = folder / "runs" / str(index) / "report.html"  # the page the name links to (a missing one: no link)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html></html>")
        entries.append(entry_from_run({
            "model": name, "model_id": f"/models/{name}", "task": "humaneval", "dataset_sha256": "ab" * 32,
            "prompt_template": "{prompt}", "sampling": SamplingParams(n=100, temperature=0.8),
            "score": score(results, list(WIDE_KS), bootstrap=100), "run_id": f"{index}-" + "f" * 40,
            "hardware": "1x NVIDIA H100 80GB HBM3", "run_page": f"runs/{index}/report.html",
            "problem_set": {"n_problems": 6, "of": 164, "ids_sha256": "c" * 64} if partial else None}))
    update_leaderboard(folder, entries)
    return folder


@pytest.mark.parametrize("width", [1024, 1400])
def test_five_pass_at_k_columns_and_long_names_never_scroll_the_page(wide_board: Path, browser: Browser, width: int):
    browser.set_width(width)
    browser.open((wide_board / "index.html").as_uri())
    heads = browser.js("Array.from(document.querySelectorAll('#board thead th')).map(th => th.textContent)")
    assert [h for h in heads if h.startswith("pass@")] == [f"pass@{k}" for k in WIDE_KS]
    assert browser.js("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    # Names stay readable: a model column of a decent width, each name in a few lines, broken at its
    # separators (never three lines of five characters), and the partial badge in view.
    names = browser.js("Array.from(document.querySelectorAll('#board a.run-link')).map(a => {"
                       " var lines = Array.from(a.getClientRects()).map(r => r.width);"
                       " return [a.textContent, lines.length, lines, a.closest('td').getBoundingClientRect().width]; })")
    assert sorted({name for name, *_ in names}) == sorted(WIDE_NAMES)
    for name, _, widths, column in names:
        assert column >= 200, (name, column)
        assert len(widths) <= 4, (name, widths)
        assert len(widths) == 1 or sum(widths) / len(widths) >= 120, (name, widths)
    badge = browser.js("(function(){ var b = document.querySelector('#board .badge.partial').getBoundingClientRect();"
                       " return [b.left, b.right, document.documentElement.clientWidth]; })()")
    assert 0 <= badge[0] and badge[1] <= badge[2]
    # every pass@k is readable, in the table or by scrolling the table's own box, never the page
    cells = browser.js("(function(){ var wrap = document.querySelector('.table-wrap');"
                       " return [wrap.scrollWidth, wrap.clientWidth, getComputedStyle(wrap).overflowX]; })()")
    assert cells[0] <= cells[1] or cells[2] in ("auto", "scroll")
    # scrolled sideways inside its box, the table keeps the model column in place
    moved = browser.js("(function(){ var wrap = document.querySelector('.table-wrap'); wrap.scrollLeft = 10000;"
                       " var name = document.querySelector('#board td.first').getBoundingClientRect().left;"
                       " var left = wrap.getBoundingClientRect().left; wrap.scrollLeft = 0; return name - left; })()")
    assert 0 <= moved <= 2
