"""The report pages without a browser: what they link, mark and escape; the Wilson marker in every view;
the leaderboard JSON's ci_method. The browser half is tests/test_report_browser.py."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from evalsuite.cli.leaderboard import format_table
from evalsuite.records import SampleResult, SamplingParams
from evalsuite.reporting.entries import entry_from_run
from evalsuite.reporting.publish import update_leaderboard
from evalsuite.reporting.store import load_leaderboard
from evalsuite.reporting.views.leaderboard_page import render_html
from evalsuite.reporting.views.contract import RunHeader, SampleView
from evalsuite.reporting.views.run_page import render_run_page
from evalsuite.scoring import score

HOSTILE = "</script><img src=x onerror=alert(1)>"
ROOT = Path(__file__).parent.parent


class Tags(HTMLParser):
    """Every start tag a browser's parser would see, and the text."""

    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _entry(model: str, passes: tuple[int, ...], problem_set: dict | None = None, run_page: str | None = None):
    results = [SampleResult(f"HumanEval/{i}", 0, bool(c), "passed" if c else "failed: AssertionError", 0.01)
               for i, c in enumerate(passes)]
    return entry_from_run({"model": model, "model_id": f"org/{model}", "task": "humaneval", "dataset_sha256": "ab" * 32,
                           "prompt_template": "{prompt}", "sampling": SamplingParams(), "run_id": f"run-{model}",
                           "score": score(results, [1], bootstrap=200), "hardware": "cpu",
                           "problem_set": problem_set, "run_page": run_page})


def test_run_page_shows_untrusted_sample_text_as_text():
    sample = SampleView("HumanEval/0", 0, "failed", "failed: ValueError", 0.02, sample_error=f"ValueError: {HOSTILE}",
                        raw=f"    return 1\n{HOSTILE}\ndef", program=f"def f():\n    return '{HOSTILE}'")
    summary = score([SampleResult("HumanEval/0", 0, False, "failed: ValueError", 0.02)], [1]).summary()
    page = render_run_page(RunHeader(model=HOSTILE, task="humaneval", run_id="r"), summary, [sample],
                           {"HumanEval/0": f"def f():\n    '''{HOSTILE}'''\n"})
    tags = Tags(page)
    assert not any(tag == "img" or any(name.startswith("on") for name in attrs) for tag, attrs in tags.tags)
    assert [tag for tag, _ in tags.tags].count("script") == 1  # the page's own
    text = "".join(tags.text)
    assert text.count(HOSTILE) >= 5  # title, heading, error message, raw output, program, prompt: as text
    assert f"ValueError: {HOSTILE}" in text


def test_run_page_has_the_viewer_filters_curve_and_per_problem_rates():
    results = [SampleResult(f"HumanEval/{i}", j, (i + j) % 3 == 0, "passed" if (i + j) % 3 == 0 else
                            ("timed out" if i == 1 and j == 0 else "failed: AssertionError"), 0.01,
                            flags=("non_plain_value",) if i == 2 and j == 1 else ())
               for i in range(4) for j in range(3)]
    summary = score(results, [1, 2]).summary()
    views = [SampleView(r.task_id, r.completion_id, r.status, r.result, r.duration_s, r.flags, "err", "raw", "prog")
             for r in results]
    page = render_run_page(RunHeader(model="m", task="humaneval", run_id="r", badges=("partial 4/164",)), summary,
                           views, {f"HumanEval/{i}": "prompt" for i in range(4)})
    for needle in ('data-filter="failed"', 'data-filter="timed out"', 'data-filter="flagged"', 'class="curve"',
                   'class="chip"', 'class="rates"', 'class="badge partial">partial 4/164', 'pre class="sample-error"',
                   'pre class="raw"', 'pre class="program"', 'pre class="prompt"', 'data-flagged="1"'):
        assert needle in page, needle
    assert page.count('<details class="sample"') == 12


def test_leaderboard_page_links_runs_marks_partial_and_wilson_and_never_cuts_names(tmp_path: Path):
    long_name = "acme/" + "very-long-model-name-" * 5
    entries = [_entry(long_name, (1, 0, 1, 1), run_page="../runs/a/report.html"),
               _entry("smoke", (0, 0), problem_set={"n_problems": 2, "of": 164, "ids_sha256": "cd" * 32},
                      run_page="javascript:alert(1)")]
    page = render_html(entries)
    tags = Tags(page).tags
    links = [attrs["href"] for tag, attrs in tags if tag == "a"]
    assert links == ["../runs/a/report.html", "../runs/a/report.html"]  # table and chart; no javascript: link
    assert page.count('class="badge partial">partial 2/164') >= 2  # table and chart
    assert "Partial runs (--limit)" in page
    assert "0.0–" in page and " Wilson" in page  # smoke: none passed, Wilson's interval, said so
    assert long_name in page and long_name[:30] + "…" not in page
    assert "text-overflow:ellipsis" not in page.split(".model{")[1].split("}")[0]


def test_a_deleted_run_keeps_its_row_and_loses_its_link(tmp_path: Path):
    """The page linked to a run folder deleted since, a link that led nowhere; the stored entry keeps it."""
    runs = tmp_path / "runs"
    for name in ("kept", "deleted"):
        (runs / name).mkdir(parents=True)
        (runs / name / "report.html").write_text("<html></html>")
    board = tmp_path / "lb"
    update_leaderboard(board, [_entry("kept", (1, 0), run_page=str(runs / "kept" / "report.html"))])
    (runs / "deleted" / "report.html").unlink()
    update_leaderboard(board, [_entry("deleted", (0, 1), run_page=str(runs / "deleted" / "report.html"))])
    links = {attrs["href"] for tag, attrs in Tags((board / "index.html").read_text()).tags if tag == "a"}
    assert links == {"../runs/kept/report.html"}
    stored = json.loads((board / "leaderboard.json").read_text())["entries"]
    assert sorted(entry["run_page"] for entry in stored) == ["../runs/deleted/report.html", "../runs/kept/report.html"]


def test_side_by_side_data_cannot_close_the_script_element(tmp_path: Path):
    runs = tmp_path / "runs"
    for name, passes in (("a", (1, 0)), ("b", (0, 1))):
        (runs / name).mkdir(parents=True)
        results = [SampleResult(f"HumanEval/{i}", 0, bool(c), "passed", 0.01) for i, c in enumerate(passes)]
        (runs / name / "summary.json").write_text(json.dumps(score(results, [1]).summary_json()))
    board = tmp_path / "lb"
    update_leaderboard(board, [_entry(HOSTILE, (1, 0), run_page=str(runs / "a" / "report.html")),
                               _entry("b", (0, 1), run_page=str(runs / "b" / "report.html"))])
    page = (board / "index.html").read_text()
    data = page.split('<script type="application/json" id="compare-data">')[1].split("</script>")[0]
    assert "<" not in data and ">" not in data
    problems = {run["label"]: run["problems"] for run in json.loads(data)}
    assert problems == {HOSTILE: {"HumanEval/0": [1, 1], "HumanEval/1": [0, 1]},
                        "b": {"HumanEval/0": [0, 1], "HumanEval/1": [1, 1]}}
    assert [tag for tag, _ in Tags(page).tags].count("img") == 0


def test_leaderboard_json_and_terminal_table_carry_the_interval_method(tmp_path: Path):
    entries = update_leaderboard(tmp_path, [_entry("none-pass", (0,) * 10), _entry("mixed", (1, 0) * 5)])
    document = json.loads((tmp_path / "leaderboard.json").read_text())
    assert document["schema_version"] == "1.7"
    methods = {e["model"]: e["metrics"]["pass@1"]["ci_method"] for e in document["entries"]}
    assert methods == {"none-pass": "wilson", "mixed": "bootstrap"}
    none_pass = next(e for e in document["entries"] if e["model"] == "none-pass")
    assert none_pass["metrics"]["pass@1"]["ci95"][1] > 0.25  # 10 problems, none solved: not [0, 0]
    assert load_leaderboard(tmp_path / "leaderboard.json") == entries
    table = format_table(entries)
    assert "0.000 [0.000, 0.278] Wilson" in table
    assert "Wilson" not in [line for line in table.splitlines() if line.startswith("mixed")][0]


def test_screenshots_are_committed_at_both_widths_and_small():
    for name in ("leaderboard-1400.png", "leaderboard-390.png", "run-1400.png", "run-390.png"):
        path = ROOT / "docs" / "screenshots" / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: python benchmarks/report_screenshots.py"
        assert path.stat().st_size < 300_000


def test_a_new_view_is_one_module_and_one_registration(tmp_path: Path):
    """A CSV of the leaderboard and a plain-text note per run, from a package installed beside evalsuite: each a
    module defining VIEW and one ``evalsuite.views`` entry point; storing entries and finishing a run then write
    them, with no caller or storage changed."""
    from evalsuite.reporting import views
    from plugin_install import installed_plugin

    modules = {
        "views_for_test.board_csv": "from evalsuite.reporting.views.contract import LeaderboardView\n"
                                    "VIEW = LeaderboardView('csv', 'board.csv', lambda data: '\\n'.join(\n"
                                    "    f'{e.model},{e.task},{e.metrics[\"pass@1\"].value}' for e in data.entries))\n",
        "views_for_test.run_note": "from evalsuite.reporting.views.contract import RunView\n"
                                   "VIEW = RunView('note', 'note.txt', lambda report: "
                                   "f'{report.header.model}: {len(report.samples)} samples')\n"}
    points = {"evalsuite.views": {"csv": "views_for_test.board_csv:VIEW", "note": "views_for_test.run_note:VIEW"}}
    with installed_plugin(tmp_path / "site", modules, points, [views.VIEWS]):
        board = tmp_path / "board"
        update_leaderboard(board, [_entry("m", (1, 0))])
        assert (board / "board.csv").read_text() == "m,humaneval,0.5"
        assert (board / "index.html").is_file()  # the built-in view still comes first
        run = tmp_path / "run"
        summary = score([SampleResult("HumanEval/0", 0, True, "passed", 0.01)], [1]).summary()
        page = views.write_run_views(run, RunHeader(model="m", task="t", run_id="r"), summary, [], {})
        assert page == run / "report.html" and page.is_file() and (run / "note.txt").read_text() == "m: 0 samples"
    assert [name for name, _ in views.VIEWS] == ["leaderboard page", "run page"]  # uninstalled: gone again
