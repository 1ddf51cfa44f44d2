"""One process at a time per run (evalsuite/runs/claims.py): the same run started twice into one output runs once,
the second is refused in one line before it loads anything, and the first's records are whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_resume import records, run_args, wait_for_lines

from evalsuite.errors import EvalsuiteError
from evalsuite.runs.claims import RunClaim, claim_name


def test_a_claim_is_held_until_released_and_names_its_holder(tmp_path):
    name = claim_name("ckpt", "humaneval", {"sampling": {"n": 4}})
    held = RunClaim.take(tmp_path, name, 0, "ckpt/humaneval")
    with pytest.raises(EvalsuiteError, match=rf"ckpt/humaneval: another evalsuite process \(pid {os.getpid()}\)"):
        RunClaim.take(tmp_path, name, 0, "ckpt/humaneval")  # a second open file description: refused like a process
    other_rank = RunClaim.take(tmp_path, name, 1, "ckpt/humaneval")  # torchrun's rank 1 claims its own shard
    other_settings = RunClaim.take(tmp_path, claim_name("ckpt", "humaneval", {"sampling": {"n": 8}}), 0, "x")
    other_output = RunClaim.take(tmp_path / "elsewhere", name, 0, "ckpt/humaneval")
    held.release()
    again = RunClaim.take(tmp_path / "." / "", name, 0, "ckpt/humaneval")  # the same folder, spelled otherwise
    with pytest.raises(EvalsuiteError, match="another evalsuite process"):
        RunClaim.take(tmp_path, name, 0, "ckpt/humaneval")
    for claim in (again, other_rank, other_settings, other_output):
        claim.release()
    assert list(tmp_path.iterdir()) == []  # the output folder holds run folders only: claims live elsewhere


def test_a_run_folder_made_by_its_claim_is_readable_as_the_umask_says_and_the_cache_claims_stay_private(tmp_path):
    """Run folders were made 0700 by the claim that first creates them: the pages the leaderboard links to could not
    be opened by a colleague or a web server (the twentieth session's run-path round)."""
    previous = os.umask(0o022)
    try:
        claim = RunClaim.take_in(tmp_path / "runs" / "m__humaneval__abc", 0, "m/humaneval")
        cached = RunClaim.take(tmp_path / "runs", "m__humaneval__abc", 0, "m/humaneval")
    finally:
        os.umask(previous)
    assert (tmp_path / "runs" / "m__humaneval__abc").stat().st_mode & 0o777 == 0o755
    assert Path(cached.handle.name).parent.stat().st_mode & 0o777 == 0o700
    claim.release()
    cached.release()


def paused_mid_run(model, output) -> tuple[list[str], dict, subprocess.Popen]:
    """A run of ``model`` into ``output``, stopped (SIGSTOP) once its first completion is saved: its claims held.
    Returns its command, environment and process (send SIGCONT to let it finish)."""
    command = [sys.executable, "-m", "evalsuite", *run_args(model, output), "--batch-size", "2"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_lines("*/completions.jsonl", output, files=1, minimum=1, proc=first)
    os.kill(first.pid, signal.SIGSTOP)
    return command, env, first


@pytest.mark.slow
def test_the_same_run_started_twice_runs_once(tiny_model_dir, tmp_path):
    """Seen before the claims: both processes generated every sample into one run folder, and both then
    failed reading it ("duplicate completion"), as did every later rerun. Seen again while the claims lived in
    the temporary folder: a second job with its own TMPDIR did not meet the first's claim."""
    output = tmp_path / "runs"
    command, env, first = paused_mid_run(tiny_model_dir("gpt2"), output)
    try:
        loud = [arg for arg in command if arg != "--quiet"]  # so that a load would show its plan line
        own_tmp = tmp_path / "second-job-tmp"  # a job of its own (per-job TMPDIR) meets the first's claim
        own_tmp.mkdir()
        second = subprocess.run(loud, env=dict(env, TMPDIR=str(own_tmp)), capture_output=True, text=True,
                                timeout=180)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert second.returncode == 2, second.stderr
    assert f"another evalsuite process (pid {first.pid}) is running this same run" in second.stderr
    assert "Traceback" not in second.stderr and "plan:" not in second.stderr  # refused before loading
    _, err = first.communicate(timeout=240)
    assert first.returncode == 0, err
    completions, verdicts = records(output)  # reading refuses duplicates
    assert len(completions) == len(verdicts) == 6 * 4
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stderr
    (record_path,) = output.glob("*/record.json")
    assert json.loads(record_path.read_text())["generation_stats"]["completions_resumed"] == 6 * 4


@pytest.mark.slow
def test_jobs_with_their_own_cache_folders_meet_at_the_run_folder(tiny_model_dir, tmp_path):
    """Claims lived in the cache folder alone: two jobs with their own (another user, another EVALSUITE_CACHE_DIR,
    two nodes writing one shared --output) both generated every sample into one run folder, and every later
    read refused it ("duplicate completion"): the work was lost. The run folder's own claim stops the second."""
    output = tmp_path / "runs"
    command, env, first = paused_mid_run(tiny_model_dir("gpt2"), output)
    try:
        second = subprocess.run(command, env=dict(env, EVALSUITE_CACHE_DIR=str(tmp_path / "other-cache")),
                                capture_output=True, text=True, timeout=180)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert second.returncode == 2, second.stderr
    assert f"another evalsuite process (pid {first.pid}, perhaps on another machine) is writing" in second.stderr
    assert "Traceback" not in second.stderr
    _, err = first.communicate(timeout=240)
    assert first.returncode == 0, err
    completions, verdicts = records(output)  # reading refuses duplicates
    assert len(completions) == len(verdicts) == 6 * 4


@pytest.mark.slow
@pytest.mark.parametrize("variant", [["--dtype", "float32"], ["--prompt-style", "base"]])
def test_flags_that_come_to_the_same_run_meet_at_its_folder(tiny_model_dir, tmp_path, variant):
    """`--dtype float32` on a CPU and `--prompt-style base` for a model without a chat template change nothing,
    so the run folder is the same; the claim taken before loading names the flags as given and let both in, and
    both then wrote one folder, which every later read refused ("duplicate completion"). The folder's own claim
    refuses the second now."""
    output = tmp_path / "runs"
    command, env, first = paused_mid_run(tiny_model_dir("gpt2"), output)
    try:
        second = subprocess.run(command + variant, env=env, capture_output=True, text=True, timeout=180)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert second.returncode == 2, second.stderr
    assert f"another evalsuite process (pid {first.pid}) is running this same run" in second.stderr
    _, err = first.communicate(timeout=240)
    assert first.returncode == 0, err
    completions, verdicts = records(output)  # one folder, whole
    assert len(completions) == len(verdicts) == 6 * 4
