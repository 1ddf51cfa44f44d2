"""Text evalsuite did not write (completions, a sample's error message, samples-file fields, names) is safe for every
writer: no page, terminal line or JSON file holds a raw bidi, invisible or control character or a lone surrogate;
a samples row whose code cannot be stored is refused when read, naming its line, before anything runs; and
``evaluate`` always ends with its report. The end-to-end cases are real ``evalsuite evaluate`` subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evalsuite.execution.samples import read_samples
from evalsuite.reporting.schema import check_schema
from evalsuite.reporting.terminal import Table
from evalsuite.reporting.views.contract import RunHeader, SampleView
from evalsuite.reporting.views.run_page import render_run_page
from evalsuite.reporting.views.style import esc, esc_block, json_for_script
from evalsuite.runs.results import validate_output
from evalsuite.scoring import ScoreSummary
from evalsuite.untrusted import dumps, is_dangerous, storable, visible
from sandbox import detect_isolation

needs_sandbox = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")

# One of each class: bidi embeddings, overrides and isolates, marks, zero-width and other invisible characters,
# C0 and C1 controls, separators, tags, fillers, variation selectors.
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u3164\u115f\ufe0f\U000e0041\U000e007f\u034f"
CONTROLS = "\x00\x07\x08\x0b\x0c\r\x1b\x7f\x85\x9b"
SEPARATORS = "\u2028\u2029"
HOSTILE = BIDI + INVISIBLE + CONTROLS + SEPARATORS
SURROGATES = "\ud800\udbff\udc00\udfff"


def raw_dangerous(text: str, allowed: str = "\n\t") -> list[str]:
    """Every dangerous code point of ``text`` as it stands, by Unicode's own categories (independent of the
    module's table) plus the default-ignorable letters and marks this suite attacks with."""
    extra = set("\u3164\u115f\u1160\uffa0\u034f") | {chr(c) for c in range(0xFE00, 0xFE10)} | {
        chr(c) for c in range(0xE0000, 0xE0080)}
    return [f"U+{ord(c):04X}" for c in text if c not in allowed
            and (unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"} or c in extra)]


def strict_text(data: bytes) -> str:
    """``data`` as UTF-8, strictly (a lone surrogate encoded as bytes fails here)."""
    return data.decode("utf-8", "strict")


def no_surrogate_in(value) -> bool:
    """Whether parsed JSON holds no lone surrogate (Python's parser accepts ``"\\ud800"``; strict ones do not)."""
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return all(no_surrogate_in(k) and no_surrogate_in(v) for k, v in value.items())
    if isinstance(value, list):
        return all(no_surrogate_in(v) for v in value)
    return True


# -- the module ----------------------------------------------------------------------------------------

def test_every_control_format_surrogate_and_separator_code_point_is_dangerous():
    missed = [f"U+{p:04X}" for p in range(0x110000)
              if unicodedata.category(chr(p)) in {"Cc", "Cf", "Cs", "Zl", "Zp"} and not is_dangerous(chr(p))]
    assert missed == []
    assert all(is_dangerous(c) for c in HOSTILE + SURROGATES)
    assert not any(is_dangerous(c) for c in "a \u00e9\u4e2d\U0001f600\u0627")  # letters, CJK, emoji, Arabic


@pytest.mark.parametrize("attack", [BIDI, INVISIBLE, CONTROLS, SEPARATORS, SURROGATES,
                                    "if x:\u202e\u2066 # }\u2069\u2066 return", "\x1b[2J\x1b]0;title\x07"])
def test_visible_leaves_nothing_raw_and_is_stable(attack):
    shown = visible(f"a{attack}b")
    assert raw_dangerous(shown, allowed="") == [] and shown.encode("utf-8")
    assert visible(shown) == shown  # escaping twice changes nothing
    assert visible("def f():\n\treturn 1", keep="\n\t") == "def f():\n\treturn 1"
    assert visible("a\nb") == "a\\x0ab"  # a one-line place keeps no newline


def test_visible_escapes_read_as_python_does():
    assert visible("\u202e\x1b\U000e0041\ud800") == "\\u202e\\x1b\\U000e0041\\ud800"


def test_json_is_lossless_for_text_and_never_holds_a_raw_control_or_a_lone_surrogate():
    data = {"key" + HOSTILE: ["value" + HOSTILE, {"nested": HOSTILE}], "lone" + SURROGATES: SURROGATES}
    for options in ({}, {"indent": 2}, {"separators": (",", ":")}):
        text = dumps(data, **options)
        assert raw_dangerous(text, allowed="\n") == []
        parsed = json.loads(strict_text(text.encode("utf-8")))
        assert parsed["key" + HOSTILE] == ["value" + HOSTILE, {"nested": HOSTILE}]  # valid text: exact
        assert parsed["lone\\ud800\\udbff\\udc00\\udfff"] == "\\ud800\\udbff\\udc00\\udfff"  # shown, not lost
        assert no_surrogate_in(parsed)


def test_storable_replaces_only_lone_surrogates():
    assert storable({"a\ud800": ["x\udfff" + BIDI, 3, None]}) == {"a\\ud800": ["x\\udfff" + BIDI, 3, None]}
    assert storable("\U0001f600") == "\U0001f600"  # a real pair is one code point in Python, and is kept


# -- each writer ---------------------------------------------------------------------------------------

def test_html_escaping_marks_hidden_code_points_and_keeps_lines():
    assert esc(f'<b title="x">{BIDI}</b>') == "&lt;b title=&quot;x&quot;&gt;" + visible(BIDI) + "&lt;/b&gt;"
    block = esc_block("s = '\u202e'\n\treturn s\ud800")
    assert '<span class="cp" title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</span>' in block
    assert "\n\treturn s" in block and '<span class="cp" title="U+D800">\\ud800</span>' in block
    assert raw_dangerous(block) == []
    data = json_for_script([{"label": "m" + HOSTILE + SURROGATES + "</script>"}])
    assert raw_dangerous(data, allowed="") == [] and "<" not in data
    assert json.loads(data) == [{"label": visible("m" + HOSTILE + SURROGATES + "</script>")}]


def test_run_page_renders_hostile_text_in_every_field_as_valid_utf8():
    evil = HOSTILE + SURROGATES + "<script>"
    sample = SampleView(task_id="T/0" + evil, completion_id=0, status="failed", result="failed: X" + evil,
                        duration_s=0.1, flags=("flag" + evil,), sample_error="E" + evil, raw="raw" + evil,
                        program="def f():\n    return '" + evil + "'\n", finish_reason="stop" + evil, num_tokens=3,
                        failure_detail={"statement": "assert" + evil, "call": "f()" + evil, "returned": evil})
    header = RunHeader(model="m" + evil, task="t" + evil, run_id="r" + evil, model_id="id" + evil,
                       badges=("b" + evil,), details={"k" + evil: "v" + evil}, leaderboard_page="../lb/index.html")
    summary = ScoreSummary.from_json({"n_samples": 1, "n_passed": 0, "n_failed": 1, "n_timed_out": 0,
                                      "per_problem": {"T/0" + evil: {"n": 1, "c": 0}}})
    page = render_run_page(header, summary, [sample], {"T/0" + evil: evil})
    assert raw_dangerous(strict_text(page.encode("utf-8"))) == []
    assert "<script>" not in page.split("<script>", 1)[0] + page.rsplit("</script>", 1)[-1]


def test_terminal_table_cells_cannot_drive_the_terminal_or_start_a_line():
    table = Table([["m\x1b[2J\u202eevil\nreference  humaneval  1.000", "0.5"]], header=["model", "pass@1"])
    lines = table.lines()
    assert len(lines) == 2 and raw_dangerous("".join(lines), allowed="") == []
    assert "m\\x1b[2J\\u202eevil\\x0areference" in lines[1]


def test_samples_reader_keeps_code_exact_and_display_fields_storable(tmp_path: Path):
    code = f"    return a + b  # {HOSTILE}\n"
    row = {"task_id": "example/0", "completion": code, "raw_completion": "x\ud800" + BIDI,
           "finish_reason": "\udfff", "extra\udc80": {"n": ["\ud83d"]}}
    (tmp_path / "s.jsonl").write_text(json.dumps(row) + "\n")  # ensure_ascii: the surrogates as JSON escapes
    [sample] = read_samples(tmp_path / "s.jsonl", {"example/0"}, "example")
    assert sample["completion"] == code  # what runs is untouched
    assert sample["raw_completion"] == "x\\ud800" + BIDI and sample["finish_reason"] == "\\udfff"
    assert sample["extra\\udc80"] == {"n": ["\\ud83d"]}


# -- evaluate, end to end ------------------------------------------------------------------------------

def evalsuite(cwd: Path, *argv: str | bytes) -> subprocess.CompletedProcess:
    """A real command; stdout and stderr as bytes, to be decoded strictly."""
    return subprocess.run([sys.executable, "-m", "evalsuite", *argv], cwd=cwd, capture_output=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))  # ensure_ascii: surrogates as "\ud800"
    return path


# The code runs exactly as read: the first passes only if its bidi characters reached the sandbox untouched.
TROJAN = ('    s = "\u202e\u2066"  # \u2067 } \u2069\u2066 if admin: \u200b\n'
          '    return a + b if s == chr(0x202e) + chr(0x2066) else -1\n')
RAISER = '    raise ValueError("\u202e\u2067" + chr(27) + "[2J" + chr(0xd800) + chr(0x85) + "\ufeff")\n'
RETURNS_HOSTILE = '    return "\u202e\x1b[31m" + chr(0xdfff) + text\n'
HIDDEN_IN_COMMENT = "    # \x85\u2028\u3164\U000e0041 hidden\n    return text == text[::-1]\n"
NAME = "model\u202e\u2066\x1b[31m\x9b2J\u200b".encode() + b"\xff"  # bytes: argv that is not UTF-8 too
SHOWN_NAME = "model\u202e\u2066\x1b[31m\x9b2J\u200b\\udcff"  # the name as data: kept, but for the surrogate


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> dict:
    """One evaluate of a samples file attacking every string field, with --json and a leaderboard; then
    ``evalsuite leaderboard`` printing it."""
    folder = tmp_path_factory.mktemp("hostile")
    rows = [
        {"task_id": "example/0", "completion": TROJAN, "raw_completion": "```\ud800" + HOSTILE + "\x1b]0;pwn\x07",
         "finish_reason": "\udfff" + BIDI, "num_tokens": "\u202e7", "note\udc00": ["\ud83d", {"\udbff": HOSTILE}]},
        {"task_id": "example/0", "completion": RAISER, "raw_completion": SURROGATES, "finish_reason": SEPARATORS},
        {"task_id": "example/1", "completion": RETURNS_HOSTILE, "model": "\ud800"},
        {"task_id": "example/1", "completion": HIDDEN_IN_COMMENT},
    ]
    samples = write_rows(folder / "hostile.jsonl", rows)
    run = evalsuite(folder, "evaluate", str(samples), "--tasks", "example", "--k", "1,2", "--output", "out",
                    "--leaderboard-dir", "lb", "--name", NAME, "--temperature", "0.8", "--json")
    board = evalsuite(folder, "leaderboard", "--dir", "lb")
    return {"folder": folder, "run": run, "board": board}


@needs_sandbox
def test_evaluate_of_hostile_rows_ends_with_its_report(hostile_run):
    run, folder = hostile_run["run"], hostile_run["folder"]
    assert run.returncode == 0, strict_text(run.stderr)[-3000:]
    document = json.loads(strict_text(run.stdout))
    validate_output(document)
    assert no_surrogate_in(document) and document["results"][0]["model"] == SHOWN_NAME
    for name in ("report.html", "results.jsonl", "summary.json"):
        assert (folder / "out" / name).is_file()
    verdicts = [json.loads(line) for line in (folder / "out" / "results.jsonl").read_text().splitlines()]
    assert [v["result"] for v in verdicts][0] == "passed"  # the trojan ran byte-exact
    assert verdicts[1]["result"] == "failed: ValueError"
    assert verdicts[1]["sample_error"].startswith("ValueError: \u202e\u2067\x1b[2J\\ud800")  # exact but the surrogate
    assert verdicts[3]["result"] == "passed"


@needs_sandbox
def test_no_writer_emits_a_raw_dangerous_code_point_or_a_lone_surrogate(hostile_run):
    folder = hostile_run["folder"]
    for path in [folder / "out" / name for name in ("report.html", "results.jsonl", "summary.json")] + [
            folder / "lb" / "leaderboard.json", folder / "lb" / "index.html"]:
        text = strict_text(path.read_bytes())
        assert raw_dangerous(text) == [], path.name
        if path.suffix in (".json", ".jsonl"):
            assert all(no_surrogate_in(json.loads(line)) for line in
                       (text.splitlines() if path.suffix == ".jsonl" else [text])), path.name
    assert raw_dangerous(strict_text(hostile_run["run"].stdout)) == []
    assert raw_dangerous(strict_text(hostile_run["run"].stderr), allowed="\n\r") == []  # \r: the progress bar
    assert raw_dangerous(strict_text(hostile_run["board"].stdout)) == []


@needs_sandbox
def test_leaderboard_entry_is_valid_and_names_the_model_visibly(hostile_run):
    folder, board = hostile_run["folder"], hostile_run["board"]
    document = json.loads(strict_text((folder / "lb" / "leaderboard.json").read_bytes()))
    check_schema(document, "leaderboard.json")
    [entry] = document["entries"]
    assert entry["model"] == SHOWN_NAME
    assert board.returncode == 0
    assert "model\\u202e\\u2066\\x1b[31m\\x9b2J\\u200b\\udcff" in strict_text(board.stdout)


@needs_sandbox
def test_report_page_shows_what_ran_with_each_hidden_code_point_marked(hostile_run):
    page = strict_text((hostile_run["folder"] / "out" / "report.html").read_bytes())

    class Blocks(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.text = [], {}

        def handle_starttag(self, tag, attrs):
            self.stack.append(dict(attrs).get("class", tag))

        def handle_endtag(self, tag):
            self.stack.pop()

        def handle_data(self, data):
            for cls in ("program", "raw", "sample-error"):
                if cls in self.stack:
                    self.text.setdefault(cls, []).append(data)

    blocks = Blocks()
    blocks.feed(page)
    programs = "".join(blocks.text["program"])
    assert visible(TROJAN, keep="\n\t") in programs
    assert '<span class="cp" title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</span>' in page
    assert "\\ud800" in "".join(blocks.text["raw"]) and "\\x1b" in "".join(blocks.text["sample-error"])


GOOD_COMPLETION = {"task_id": "example/1", "completion": "    return text == text[::-1]\n"}
GOOD_SOLUTION = {"task_id": "example/1", "solution": "def is_palindrome(text):\n    return text == text[::-1]\n"}


@needs_sandbox
@pytest.mark.parametrize("field,good,row", [
    ("completion", GOOD_COMPLETION, {"task_id": "example/0", "completion": "    return a + b  # \ud800\n"}),
    ("completion", GOOD_COMPLETION, {"task_id": "example/0", "completion": "\udfff", "raw_completion": "x"}),
    ("solution", GOOD_SOLUTION, {"task_id": "example/0", "solution": "def add(a, b):\n    return a + b  # \udc80\n"}),
    ("task_id", GOOD_COMPLETION, {"task_id": "example/0\ud800", "completion": "    return a + b\n"}),
])
def test_row_the_writers_cannot_hold_is_refused_by_line_before_anything_runs(tmp_path, field, good, row):
    samples = write_rows(tmp_path / "s.jsonl", [good, good, row])
    result = evalsuite(tmp_path, "evaluate", str(samples), "--tasks", "example", "--output", "out")
    err = strict_text(result.stderr)
    assert result.returncode == 2, err
    assert err.startswith(f"error: {samples}:3: {field} is not valid Unicode (lone surrogate escape \\u")
    assert len(err.strip().splitlines()) == 1 and "execute" not in err and not (tmp_path / "out").exists()


@needs_sandbox
def test_a_samples_file_named_in_bytes_that_are_not_utf8_names_one_entry_across_reruns(tmp_path):
    samples = write_rows(tmp_path / "s.jsonl", [{"task_id": "example/0", "completion": "    return a + b\n"}])
    hostile = Path(os.fsdecode(bytes(tmp_path) + "/run\u202e\x1b[1m".encode() + b"\xfe.jsonl"))
    samples.rename(hostile)
    for _ in range(2):  # the second run must replace the entry, not add one beside it
        result = evalsuite(tmp_path, "evaluate", os.fsencode(hostile), "--tasks", "example", "--k", "1",
                           "--output", "out", "--leaderboard-dir", "lb")
        assert result.returncode == 0, strict_text(result.stderr)[-2000:]
        assert raw_dangerous(strict_text(result.stdout)) == []
    document = json.loads(strict_text((tmp_path / "lb" / "leaderboard.json").read_bytes()))
    check_schema(document, "leaderboard.json")
    assert [entry["model"] for entry in document["entries"]] == ["run\u202e\x1b[1m\\udcfe"]
    assert raw_dangerous(strict_text((tmp_path / "lb" / "leaderboard.json").read_bytes())) == []
    assert raw_dangerous(strict_text((tmp_path / "out" / "report.html").read_bytes())) == []
