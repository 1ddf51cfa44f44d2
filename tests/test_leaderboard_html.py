"""The static leaderboard page: self-contained, escaped, and (when Chromium is installed) rendered for real."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evalsuite.reporting.entries import entry_from_run
from evalsuite.reporting.model import LeaderboardEntry
from evalsuite.records import SampleResult, SamplingParams
from evalsuite.reporting.views import write_leaderboard_views
from evalsuite.reporting.views.leaderboard_page import render_html
from evalsuite.scoring import score

HOSTILE = '</script><script>alert("pwned")</script><img src=x onerror=alert(1)> & \'q\''


def _entry(model: str, passes: tuple[int, ...], n: int = 1, temperature: float = 0.0,
           task: str = "humaneval") -> LeaderboardEntry:
    """Problem i has ``passes[i]`` of its n samples passing; a real Score, as the runner makes it."""
    results = [SampleResult(f"{task}/{i}", j, j < c, "passed", 0.01) for i, c in enumerate(passes) for j in range(n)]
    return entry_from_run({
        "model": model, "model_id": f"org/{model}", "task": task, "dataset_sha256": "ab" * 32,
        "prompt_template": "{prompt}", "sampling": SamplingParams(n=n, temperature=temperature),
        "score": score(results, [1, 10] if n >= 10 else [1], bootstrap=200), "run_id": "r1", "hardware": "cpu"})


def _entries() -> list[LeaderboardEntry]:
    return [
        _entry("deepseek-coder", (9, 4, 10, 2), n=10, temperature=0.8),
        _entry("gpt-j-6b", (1, 0, 0, 0)),
        _entry(HOSTILE, (1, 1, 0, 0)),
        _entry("codellama", (1, 1, 1, 0), task="mbpp"),
    ]


class _Tags(HTMLParser):
    """What a browser's parser sees: every start tag with its attributes."""

    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_hostile_model_name_is_escaped_everywhere():
    page = render_html(_entries())
    tags = _Tags(page).tags
    assert [tag for tag, _ in tags].count("script") == 1  # only the page's own sorting script
    assert not any(tag == "img" or any(name.startswith("on") for name in attrs) for tag, attrs in tags)
    assert page.count(html.escape(HOSTILE, quote=True)) >= 3  # table cell, its tooltip, chart label


def test_page_is_self_contained():
    page = render_html(_entries())
    links = [(tag, attrs) for tag, attrs in _Tags(page).tags if {"src", "href"} & set(attrs)]
    assert links == []
    assert set(re.findall(r"https?://[^\s\"'<]+", page)) == set()  # no URL at all
    assert "default-src 'none'" in page  # CSP: the browser blocks any network access


def test_page_has_table_rows_and_one_chart_per_task(tmp_path: Path):
    path = write_leaderboard_views(tmp_path, _entries())
    page = path.read_text()
    assert len(re.findall(r"<tr data-task=", page)) == 4
    assert len(re.findall(r'<figure class="card" data-task=', page)) == 2
    assert re.findall(r'data-key="(pass@\d+)"', page) == ["pass@1", "pass@10"]
    assert "75.0" in page  # codellama on mbpp: pass@1 = 0.75, shown in percent


def test_empty_leaderboard_page_says_so():
    page = render_html([])
    assert "No results yet" in page and "<table" not in page


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed (Debian: apt-get install chromium)")
def test_page_renders_in_headless_chromium(tmp_path: Path):
    path = write_leaderboard_views(tmp_path, _entries())
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--dump-dom", f"{path.as_uri()}#sort=pass%401-asc"],
            capture_output=True, text=True, timeout=30, check=True).stdout
    assert 'id="board" class="board" data-ready="true"' in dom  # the script ran to the end
    rows = re.findall(r'<tr data-task="[^"]*"><td class="first" data-sort="([^"]*)"', dom)
    # Sorted by the URL's #sort=pass@1-asc: gpt-j 0.25, hostile 0.5, deepseek 0.625, codellama 0.75.
    assert [html.unescape(row) for row in rows] == ["gpt-j-6b", HOSTILE.casefold(), "deepseek-coder", "codellama"]
    assert 'data-key="pass@1" data-type="num" class="num" tabindex="0" aria-sort="ascending"' in dom
    assert len(re.findall(r'<figure class="card" data-task=', dom)) == 2
    assert len(re.findall(r'<div class="fill"', dom)) == 5  # 4 entries' pass@1 + deepseek's pass@10
    assert dom.count("<script") == 1 and "<img" not in dom  # the hostile name stayed text


def test_the_same_board_renders_the_same_page(monkeypatch):
    """The page said "updated <render time>", so every `evalsuite leaderboard` changed index.html: a CI that commits
    it saw churn. It now says the newest entry's date."""
    import itertools

    from evalsuite.reporting.views import leaderboard_page

    clock = (f"2030-01-01T00:00:{second:02d}Z" for second in itertools.count())
    monkeypatch.setattr(leaderboard_page, "utc_now_iso", lambda: next(clock))
    entries = _entries()
    first, again = render_html(entries), render_html(entries)
    assert first == again
    newest = max(e.date for e in entries)
    assert newest.replace("T", " ").replace("Z", " UTC") in first


def test_a_run_page_link_is_percent_encoded():
    """A folder named `runs #1?x` made the link `../runs #1?x/...`, which a browser reads as `../runs ` with a
    fragment: the link led nowhere."""
    from urllib.parse import unquote, urlsplit

    from evalsuite.reporting.views.style import safe_href

    href = safe_href("../runs #1?x 100%/reference__humaneval__abc/report.html")
    assert href == "../runs%20%231%3Fx%20100%25/reference__humaneval__abc/report.html"
    parts = urlsplit(href)
    assert not parts.fragment and not parts.query
    assert unquote(parts.path) == "../runs #1?x 100%/reference__humaneval__abc/report.html"
    assert safe_href("javascript:alert(1)") is None and safe_href("//evil/x") is None
