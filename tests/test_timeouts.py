"""Calibrated per-problem time limits (EvalPlus's rule), their per-machine cache, timeouts counted apart from
failures, and ``evalsuite selfcheck``. Real sandbox, real timing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.execution.executor import ExecutionOptions
from evalsuite.jsonl import read_jsonl
from evalsuite.tasks.discovery import TaskRegistry
from evalsuite.execution.timeouts import (DEFAULT_FACTOR, DEFAULT_FLOOR_S, TimeoutPolicy, calibrate, calibration_path,
                                         resolve_timeouts)
from sandbox import detect_isolation

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")

# A task whose first canonical solution takes 0.3 s of wall time: its calibrated limit is 4 x that, not the floor.
SLOW_TASK = textwrap.dedent('''
    from evalsuite import hookimpl
    from evalsuite.tasks.task import Problem, Task

    @hookimpl
    def evalsuite_register_tasks():
        return [Task(name="slowtask", description="one slow problem, one quick one", problems=[
            Problem(task_id="slow/0", prompt="import time\\ndef nap(x):\\n",
                    canonical_solution="    time.sleep(0.3)\\n    return x\\n",
                    test="def check(f):\\n    assert f(4) == 4\\n", entry_point="nap"),
            Problem(task_id="slow/1", prompt="def inc(x):\\n", canonical_solution="    return x + 1\\n",
                    test="def check(f):\\n    assert f(1) == 2\\n", entry_point="inc"),
            Problem(task_id="slow/2", prompt="def dec(x):\\n", canonical_solution="    return 1 / 0\\n",
                    test="def check(f):\\n    assert f(1) == 0\\n", entry_point="dec"),
        ])]
''')


@pytest.fixture
def slow_task_dir(tmp_path) -> Path:
    directory = tmp_path / "tasks"
    directory.mkdir()
    (directory / "task_slow.py").write_text(SLOW_TASK)
    return directory


def test_policy_is_evalplus_rule_with_its_defaults():
    policy = TimeoutPolicy()
    assert (policy.floor_s, policy.factor) == (DEFAULT_FLOOR_S, DEFAULT_FACTOR) == (1.0, 4.0)
    assert policy.limit_for(0.01) == 1.0 and policy.limit_for(0.5) == 2.0 and policy.calibrated
    assert not TimeoutPolicy(fixed_s=3.0).calibrated


def test_calibration_times_each_canonical_once_and_caches_it_per_machine_and_data(slow_task_dir):
    task = TaskRegistry.discover([slow_task_dir]).get("slowtask")
    options = ExecutionOptions(workers=2, show_progress=False)
    first = calibrate(task, task.problems(), options)
    assert first.measured_now == 3
    assert 0.3 <= first.times_s["slow/0"] < 5 and first.times_s["slow/1"] < 0.3
    assert first.failed == {"slow/2": "failed: ZeroDivisionError"}  # a broken reference is recorded, not timed
    path = calibration_path(task)
    assert path == first.path and path.exists()
    assert task.dataset_sha256[:16] in path.name and "evalsuite" in path.name
    cached = json.loads(path.read_text())
    assert cached["times_s"] == first.times_s and cached["machine"]["cpu_count"]

    again = calibrate(task, task.problems(), options)
    # the timed ones come from the cache; a failed canonical solution is tried again (a cached failure would fix
    # that problem's fallback limit for good, even where it failed for a transient reason such as a broken checkout)
    assert again.measured_now == 1 and again.times_s == first.times_s
    assert again.failed == first.failed
    assert calibrate(task, task.problems(), options, recalibrate=True).measured_now == 3


def test_timeouts_are_their_own_verdict_and_calibrated_limits_follow_the_canonical_time(slow_task_dir, tmp_path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in [
        {"task_id": "slow/0", "completion": "    time.sleep(0.6)\n    return x\n"},  # slower than the reference
        {"task_id": "slow/1", "completion": "    return x + 1\n"},
        {"task_id": "slow/1", "completion": "    return x\n"},  # wrong
    ]))
    base = ["evaluate", str(samples), "--task", "slowtask", "--task-dir", str(slow_task_dir), "--k", "1", "--quiet"]

    assert main([*base, "--timeout-floor", "0.2", "--output", str(tmp_path / "calibrated")]) == 0
    summary = json.loads((tmp_path / "calibrated" / "summary.json").read_text())
    limits = summary["execution"]["timeouts"]
    assert limits["mode"] == "calibrated" and limits["floor_s"] == 0.2 and limits["factor"] == 4.0
    assert limits["per_problem_s"]["slow/0"] >= 1.2  # 4 x >= 0.3 s: room for a correct but slower solution
    assert limits["per_problem_s"]["slow/1"] == pytest.approx(0.2, abs=0.2)
    assert (summary["n_passed"], summary["n_failed"], summary["n_timed_out"]) == (2, 1, 0)

    assert main([*base, "--timeout", "0.5", "--output", str(tmp_path / "fixed")]) == 0
    summary = json.loads((tmp_path / "fixed" / "summary.json").read_text())
    assert summary["execution"]["timeouts"] == {"mode": "fixed", "timeout_s": 0.5}
    assert (summary["n_passed"], summary["n_failed"], summary["n_timed_out"]) == (1, 1, 1)
    assert summary["timed_out_per_problem"] == {"slow/0": 1}
    rows = [row for _, row in read_jsonl(tmp_path / "fixed" / "results.jsonl")]
    assert [r["status"] for r in rows] == ["timed out", "passed", "failed"]


def test_selfcheck_passes_humaneval_and_reports_what_does_not_pass(slow_task_dir, capsys):
    assert main(["selfcheck", "--task", "humaneval", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "selfcheck humaneval: PASS 164/164 canonical solutions passed (0 failed, 0 timed out)" in out
    assert "calibrated max(1 s, 4 x canonical time)" in out

    assert main(["selfcheck", "--task", "slowtask", "--task-dir", str(slow_task_dir), "--quiet", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["passed"], report["failed"], report["timed_out"]) == (2, 1, 0)
    assert report["not_passed"][0]["task_id"] == "slow/2"

    assert main(["selfcheck", "--task", "slowtask", "--task-dir", str(slow_task_dir), "--quiet",
                 "--timeout", "0.1"]) == 1
    out = capsys.readouterr().out
    assert "(1 failed, 1 timed out)" in out and "slow/0: timed out" in out and "fixed 0.1 s" in out


def test_a_canonical_solution_that_fails_is_said_not_silently_given_the_fallback(slow_task_dir, capsys):
    task = TaskRegistry.discover([slow_task_dir]).get("slowtask")
    limits, info = resolve_timeouts(task, task.problems(), ExecutionOptions(workers=2, show_progress=False),
                                    TimeoutPolicy())
    err = capsys.readouterr().err
    assert "warning: 1 canonical solution(s) of slowtask did not pass" in err and "slow/2" in err
    assert info["fallback_problems"] == ["slow/2"] and "slow/2" not in limits


def test_instruct_runs_calibrate_with_the_canonical_solution_as_a_whole_program(tmp_path, monkeypatch):
    """Under instruct, completions are whole programs (SolutionTask): the canonical solution is timed as the
    prompt's completion by it, not as a bare body (which failed every problem with IndentationError, so every
    instruct run fell back to the fixed limit)."""
    from evalsuite.protocol.asking import SolutionTask

    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path))
    task = TaskRegistry.discover([]).get("humaneval")
    problems = task.problems()[:4]
    calibration = calibrate(SolutionTask(task), problems, ExecutionOptions(workers=1, show_progress=False))
    assert calibration.failed == {} and len(calibration.times_s) == 4


def test_a_test_changed_over_the_same_data_is_timed_again(tmp_path):
    """The cache is keyed by the data's sha256; a spec switching its test_field to a heavier test of the same data
    file kept the light test's times, and the heavy test's correct samples timed out (red-team round 20). Each
    time carries the digest of the program timed, and a changed program is timed again."""
    directory = tmp_path / "tasks"
    directory.mkdir()
    row = {"task_id": "t/0", "prompt": "def inc(x):\n", "canonical_solution": "    return x + 1\n",
           "entry_point": "inc", "test": "def check(f):\n    assert f(1) == 2\n",
           "test_heavy": "import time\ndef check(f):\n    time.sleep(0.6)\n    assert f(1) == 2\n"}
    (directory / "rows.jsonl").write_text(json.dumps(row) + "\n")

    def spec(test_field: str):
        (directory / "task_mini.yaml").write_text(
            f"name: mini\ndata: rows.jsonl\nprompt: \"{{prompt}}\"\ntest_field: {test_field}\ntest_style: check\n"
            "entry_point_field: entry_point\nsolution_field: canonical_solution\n")
        task = TaskRegistry.discover([directory]).get("mini")
        return task, task.problems()

    options = ExecutionOptions(workers=1, show_progress=False)
    light, problems = spec("test")
    first = calibrate(light, problems, options)
    assert first.measured_now == 1 and first.times_s["t/0"] < 0.6
    heavy, problems = spec("test_heavy")
    assert heavy.dataset_sha256 == light.dataset_sha256  # the same data: the same cache file
    again = calibrate(heavy, problems, options)
    assert again.measured_now == 1 and again.times_s["t/0"] >= 0.6
    assert calibrate(heavy, problems, options).measured_now == 0  # and cached as such
    assert calibrate(light, spec("test")[1], options).measured_now == 1  # the light one timed again in its turn
