"""The Python API: ``evalsuite.run`` / ``evalsuite.evaluate`` return typed results through the CLI's
own code; the README's example is run as written; ``import evalsuite`` stays cheap."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import evalsuite
from evalsuite.errors import EvalsuiteError
from evalsuite.runs.results import PassAtK, RunResult, TaskScore, validate_output
from sandbox import detect_isolation

README = Path(__file__).resolve().parents[1] / "README.md"
needs_sandbox = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")


def readme_python_example() -> str:
    """The ```python block of the README's "Python API" section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Scripts and CI: `--json` and the Python API"):]
    section = section[:section.index("\n## ", 1)]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


@needs_sandbox
def test_the_readme_example_runs_as_written(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_python_example(), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("1.0 (0.43") and out.splitlines()[0].endswith(" True")
    assert (tmp_path / "rescored" / "summary.json").is_file()
    assert len(list((tmp_path / "runs").iterdir())) == 1


@needs_sandbox
def test_run_returns_typed_scores_and_prints_nothing_on_stdout(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    result = evalsuite.run(models=["reference"], tasks=["humaneval", "example"], limit=2, quiet=True,
                           output=tmp_path / "out", leaderboard_dir="board", fail_under={"pass@1": 0.5})
    assert capsys.readouterr().out == ""
    assert isinstance(result, RunResult) and result.ks == [1]
    assert [(s.model, s.task) for s in result.scores] == [("reference", "humaneval"), ("reference", "example")]
    score = result.score("reference", "humaneval")
    assert isinstance(score, TaskScore) and isinstance(score.pass_at[1], PassAtK)
    assert score.pass_at[1].value == 1.0 and score.pass_at[1].ci_method == "wilson"
    assert score.partial and (score.n_problems, score.n_problems_in_task) == (2, 164)
    assert score.record == score.run_dir / "record.json" and score.record.is_file()
    assert score.run_dir.parent == tmp_path / "out"
    record = json.loads(score.record.read_text())
    assert record["argv"][:2] == ["evalsuite", "run"]  # the command the call stands for, in the record
    assert result.leaderboard == Path("board") / "leaderboard.json" and result.leaderboard.is_file()
    assert result.fail_under.met and result.fail_under.thresholds == {"pass@1": 0.5}
    validate_output(result.to_json())  # to_json() is what --json prints


@needs_sandbox
def test_evaluate_and_run_agree_with_the_cli(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = subprocess.run([sys.executable, "-m", "evalsuite", "run", "--limit", "2", "--json", "--quiet",
                          "--no-leaderboard"], capture_output=True, text=True, check=True)
    api = evalsuite.run(limit=2, quiet=True, no_leaderboard=True).to_json()
    assert api == {**json.loads(cli.stdout), "results": [{**json.loads(cli.stdout)["results"][0], "generated_now": 0}]}
    scored = evalsuite.evaluate(Path(api["results"][0]["run_dir"]) / "completions.jsonl", output="scored", k=[1],
                                quiet=True)
    assert scored.to_json()["command"] == "evaluate" and scored.scores[0]["pass@1"] == 1.0
    assert scored.scores[0].record is None and scored.scores[0].summary == Path("scored") / "summary.json"


def test_bad_arguments_raise_like_the_cli_says(tmp_path: Path):
    with pytest.raises(TypeError, match="unexpected keyword argument 'nonsense'"):
        evalsuite.run(nonsense=1)
    with pytest.raises(EvalsuiteError, match="invalid choice"):
        evalsuite.run(prompt_style="chatty")
    with pytest.raises(EvalsuiteError, match="unknown task 'nope'"):
        evalsuite.run(tasks=["nope"], output=tmp_path / "runs", no_leaderboard=True)


def test_import_evalsuite_stays_cheap():
    code = ("import sys, evalsuite; evalsuite.RunResult; evalsuite.TaskScore; "
            "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'numpy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_readmes_links_into_the_docs_name_files_and_headings_that_exist():
    """A renamed heading silently breaks a link a reader follows to check a claim (two were broken once)."""
    import re

    def slug(heading: str) -> str:  # GitHub's anchor: lower case, punctuation dropped, spaces to hyphens
        return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")

    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#\s]+)(?:#([^)\s]+))?\)", text)
    assert links
    for path, anchor in links:
        target = README.parent / path
        assert target.exists(), path
        if anchor:
            headings = {slug(line.lstrip("#")) for line in target.read_text(encoding="utf-8").splitlines()
                        if line.startswith("#")}
            assert anchor in headings, f"{path}#{anchor}"


def test_keywords_are_the_flags_as_a_user_writes_them(tmp_path: Path, monkeypatch):
    """`evaluate(tasks=...)` and `leaderboard_dir=` (the flags' own names) were TypeErrors, and a generator of model
    names became one name, "<generator object ...>"."""
    from evalsuite.cli.api import command_argv

    argv = command_argv("evaluate", ["s.jsonl"], output="out", tasks="mbpp", leaderboard_dir="board")
    assert "--tasks=mbpp" in argv and "--leaderboard-dir=board" in argv
    with pytest.raises(TypeError, match="one setting"):
        command_argv("evaluate", ["s.jsonl"], output="out", task="humaneval", tasks="mbpp")
    assert "--models=reference,other" in command_argv("run", models=(m for m in ["reference", "other"]))
    assert "--models=a,b" in command_argv("run", models={"a": 1, "b": 2}.keys())
    monkeypatch.chdir(tmp_path)
    done = evalsuite.run(models=(m for m in ["reference"]), limit=2, no_leaderboard=True, quiet=True)
    assert [score.model for score in done.scores] == ["reference"]


@needs_sandbox
def test_calls_on_two_threads_print_nothing_on_stdout_and_give_it_back(tmp_path: Path, capsys):
    """``contextlib.redirect_stdout`` swapped stdout for the whole process: two calls on two threads could leave
    ``sys.stdout`` on stderr for good (the second saved the first's redirect and restored it last), and a thread
    outside any call printed to stderr meanwhile."""
    before = sys.stdout
    start = threading.Barrier(3)
    results: dict[str, RunResult] = {}

    def call(name: str) -> None:
        start.wait()  # not quiet: each prints its plan and table, which must reach stderr
        results[name] = evalsuite.run(models="reference", limit=2, output=tmp_path / name, no_leaderboard=True)

    def bystander() -> None:
        start.wait()
        for line in range(40):
            print(f"bystander {line}")
            time.sleep(0.02)

    threads = [threading.Thread(target=call, args=(name,)) for name in ("a", "b")]
    threads.append(threading.Thread(target=bystander))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sys.stdout is before
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"bystander {line}" for line in range(40)]
    assert err.count("reference") >= 2 and sorted(results) == ["a", "b"]
    assert all(result.scores[0].pass_at[1].value == 1.0 for result in results.values())


@needs_sandbox
def test_calls_on_two_threads_one_importing_torch_both_finish(tiny_model_dir, tmp_path: Path):
    """In a fresh process a call that loads a model imports torch while a `reference` call on another thread
    asked which GPUs there are: it read a half-initialized torch from sys.modules ("partially initialized module
    'torch' has no attribute 'cuda'") and died with a traceback (3 of 3 tries)."""
    script = f"""
import threading, evalsuite
errors = []
def call(**options):
    try:
        evalsuite.run(limit=1, quiet=True, no_leaderboard=True, **options)
    except BaseException as exc:
        errors.append(repr(exc))
calls = [dict(models="reference", output={str(tmp_path / 'a')!r}),
         dict(models={str(tiny_model_dir('gpt2'))!r}, max_new_tokens=4, device="cpu", output={str(tmp_path / 'b')!r})]
threads = [threading.Thread(target=call, kwargs=kw) for kw in calls]
[t.start() for t in threads]
[t.join() for t in threads]
assert not errors, errors
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((tmp_path / "a").glob("*/record.json"))) == len(list((tmp_path / "b").glob("*/record.json"))) == 1
