"""Ranks that start together and stop together: on a fresh folder no rank takes another's shard, being written,
for earlier work; a launcher that started one process of several is refused in one line; a rank that dies makes
the others stop with one clear error within a bounded time (the launch is by hand, as ``srun`` does it, so no
torchrun agent tears the others down for us). torchrun's own two-rank run is in ``tests/test_resume.py``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.reference import ReferenceGenerator
from evalsuite.jsonl import JsonlAppender
from evalsuite.records import SamplingParams
from evalsuite.runs.distributed import DistContext, check_one_process_launch, rank_cpus, rank_gpu
from evalsuite.runs.generate import generate_missing
from evalsuite.runs.rundir import RunDir
from evalsuite.tasks.discovery import TaskRegistry

REPO = Path(__file__).resolve().parent.parent
ACCELERATE = shutil.which("accelerate", path=str(Path(sys.executable).parent))


def test_a_rank_does_not_take_the_other_ranks_rows_for_earlier_work(tmp_path, capsys):
    task = TaskRegistry.discover([]).get("humaneval")
    problems = task.problems()[:4]
    rank0, rank1 = DistContext(0, 2), DistContext(1, 2)
    run_dir = RunDir(tmp_path / "run")
    with JsonlAppender(run_dir.path / rank1.completions_name()) as other:  # rank 1 got there first
        for problem in rank1.shard(problems):
            other.write(run_dir.sealed({"task_id": problem.task_id, "completion_id": 0, "completion": "pass"}))
    mine = rank0.shard(problems)
    generated, _ = generate_missing(ReferenceGenerator(), task, mine, (), SamplingParams(), run_dir, "reference",
                                    True, {p.task_id for p in problems}, rank0.completions_name())
    assert generated == len(mine)
    out, err = capsys.readouterr()
    assert "resuming" not in out + err  # the line goes to stderr (tqdm's write() defaults to stdout)


def test_a_launcher_that_started_one_process_of_several_is_refused():
    accelerate_one_of_two = {"ACCELERATE_MIXED_PRECISION": "no", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    with pytest.raises(EvalsuiteError, match="accelerate launch started one process where several were asked"):
        check_one_process_launch(accelerate_one_of_two)
    check_one_process_launch({**accelerate_one_of_two, "WORLD_SIZE": "2"})  # its multi-process launcher
    check_one_process_launch({"ACCELERATE_MIXED_PRECISION": "no"})  # accelerate launch of one process
    check_one_process_launch({"MASTER_PORT": "29500"})  # a stray variable of the user's own


@pytest.mark.skipif(ACCELERATE is None, reason="accelerate not installed")
def test_accelerate_launch_runs_the_ranks_asked_for_or_refuses(tmp_path):
    import torch

    if torch.cuda.device_count() > 1:
        pytest.skip("with several GPUs accelerate launches the processes asked for")
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), OMP_NUM_THREADS="1",  # no accelerate config of the user's
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    launched = subprocess.run([ACCELERATE, "launch", "--num_processes", "2", "-m", "evalsuite", "--", "run",
                               "--models", "reference", "--limit", "1", "--output", str(tmp_path / "runs"),
                               "--no-leaderboard", "--quiet"], env=env, capture_output=True, text=True, timeout=120)
    assert launched.returncode != 0
    assert "error: accelerate launch started one process where several were asked for" in launched.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_rank_that_dies_stops_the_other_with_one_clear_error(tiny_model_dir, tmp_path):
    args = [sys.executable, "-m", "evalsuite", "run", "--models", str(tiny_model_dir("gpt2")), "--n", "4",
            "--limit", "6", "--temperature", "0.8", "--max-new-tokens", "48", "--batch-size", "2", "--device", "cpu",
            "--threads", "1", "--quiet", "--no-leaderboard", "--output", str(tmp_path / "runs")]
    env = dict(os.environ, OMP_NUM_THREADS="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    ranks = [subprocess.Popen(args, env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    try:
        deadline = time.monotonic() + 180
        while not list(tmp_path.glob("runs/*/completions.rank1.jsonl")):
            assert time.monotonic() < deadline and all(rank.poll() is None for rank in ranks), "rank 1 never wrote"
            time.sleep(0.02)
        ranks[1].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        _, err = ranks[0].communicate(timeout=120)
        waited = time.monotonic() - killed
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
                rank.communicate()
    assert ranks[0].returncode == 1, err[-2000:]
    assert "error: rank 0: another rank stopped" in err and "rerun the same command" in err
    assert "Traceback" not in err, err[-2000:]
    assert waited < 60  # its own shard's work, then the error at once: never a collective's 30-minute timeout
    (record,) = tmp_path.glob("runs/*/record.json")
    assert json.loads(record.read_text())["status"] == "failed"  # not left "running"


def test_an_interrupted_invocation_is_counted_from_every_ranks_saved_rows():
    """Stopped under torchrun, rank 0 writes the record knowing only its own rows: the next invocation counts
    what each stopped invocation made from the rows that carry its id, in every rank's file, so the totals over
    the run's invocations are its completions (they said 7 of 8 after a 2-rank run was stopped and resumed)."""
    from types import SimpleNamespace

    from evalsuite.runs.invocations import earlier_invocations, totals

    stopped = {"invocation_id": "a", "started_at": "t", "status": "interrupted", "completions_generated": 2,
               "tokens_generated": 91, "generate_s": 40.0}
    previous = SimpleNamespace(invocations=[stopped], invocation_id="a")
    rows = [{"task_id": f"t/{i}", "completion_id": 0, "invocation_id": "a", "num_tokens": 30 + i} for i in range(3)]
    [recounted] = earlier_invocations(previous, lambda: rows)  # rank 0's two rows and rank 1's one
    assert recounted["completions_generated"] == 3 and recounted["tokens_generated"] == 93
    assert recounted["status"] == "interrupted" and recounted["generate_s"] == 40.0
    resumed = {"invocation_id": "b", "completions_generated": 5, "tokens_generated": 100, "generate_s": 9.0}
    assert totals([recounted, resumed])["completions_generated"] == 8


@pytest.mark.parametrize("rank", ["0", "1"])
def test_the_limit_warning_is_said_once_by_rank_0(monkeypatch, capsys, rank):
    from evalsuite.cli.run import warn_partial

    monkeypatch.setenv("RANK", rank)
    warn_partial([TaskRegistry.discover([]).get("humaneval")], 3)
    said = capsys.readouterr().err
    assert ("--limit 3: a smoke test" in said) == (rank == "0"), said


@pytest.mark.parametrize("local_rank,visible,local_ranks,gpu", [
    (0, 0, 4, None),   # no GPU: gloo on the CPU
    (2, 4, 4, 2),      # torchrun on a node whose GPUs are all visible: the rank's own index
    (3, 1, None, 0),   # srun --gpus-per-task=1: each rank sees its own GPU alone, as cuda:0
    (0, 8, 2, 0),
])
def test_each_rank_decodes_on_its_own_gpu(local_rank, visible, local_ranks, gpu):
    assert rank_gpu(local_rank, visible, local_ranks) == gpu
    assert DistContext(world_size=2, local_rank=local_rank, gpu=gpu).device == ("cpu" if gpu is None else f"cuda:{gpu}")


@pytest.mark.parametrize("local_rank,visible,local_ranks", [(1, 1, 8), (5, 4, None), (0, 2, 3)])
def test_more_ranks_than_gpus_on_a_node_is_refused_in_one_line(local_rank, visible, local_ranks):
    """The README's `torchrun --nproc-per-node 8` on a one-GPU machine: NCCL would refuse two ranks on one GPU
    mid-start (before, rank 0 asked for NCCL and the others for gloo)."""
    with pytest.raises(EvalsuiteError, match=f"ranks on this node see {visible} GPU"):
        rank_gpu(local_rank, visible, local_ranks)


@pytest.mark.parametrize("local_rank,local_ranks,allowed,online,share", [
    (2, 4, list(range(64)), 64, list(range(32, 48))),  # torchrun, 4 ranks on a 64-core host: a block each
    (1, 2, list(range(5)), 5, [2, 3]),                  # an odd core left over goes to no rank's pool
    (0, 1, list(range(8)), 8, None),                    # one rank: its affinity is left alone
    (1, 2, [4, 5, 6, 7], 8, None),                      # narrowed already (srun --cpu-bind, a container)
    (3, 4, [0, 1], 2, None),                            # more ranks than CPUs: nothing to split
])
def test_ranks_on_one_node_split_its_cpus_in_blocks(local_rank, local_ranks, allowed, online, share):
    """Each rank's sandbox pool has one worker per CPU it may use: without a split, 4 ranks on 64 cores ran
    256 pinned workers, and a rank executing its samples slowed the ranks still generating."""
    assert rank_cpus(local_rank, local_ranks, allowed, online) == share


def test_the_record_says_every_ranks_sandbox_where_they_differ():
    """Under torchrun the record's execution block was rank 0's alone: a node without bubblewrap, run with
    --allow-unsandboxed, executed its shard with rlimits only while the record and the leaderboard said bubblewrap."""
    from evalsuite.runs.pipeline import RankShare, merged_execution

    def share(rank: int, mode: str, workers: int, restarts: int) -> RankShare:
        info = {"mode": mode, "isolation": f"{mode} detail", "limits": "rlimits", "workers": workers,
                "timeout_s": 3.0, "worker_restarts": restarts}
        return RankShare(rank, [], 0, 0.0, 1.0, 1.0, 1, workers, info)

    same = merged_execution([share(0, "bubblewrap", 4, 0), share(1, "bubblewrap", 4, 2)])
    assert same == {"mode": "bubblewrap", "isolation": "bubblewrap detail", "limits": "rlimits", "workers": 8,
                    "timeout_s": 3.0, "worker_restarts": 2}
    mixed = merged_execution([share(0, "bubblewrap", 4, 0), share(1, "none", 2, 0)])
    assert mixed["mode"] == "bubblewrap,none" and mixed["isolation"] == "bubblewrap detail,none detail"
    assert share(1, "none", 2, 0).to_json()["sandbox"] == {"mode": "none", "isolation": "none detail",
                                                            "limits": "rlimits", "workers": 2, "worker_restarts": 0}


@pytest.mark.parametrize("held_claim", ["cache", "run folder"])
def test_a_run_claimed_elsewhere_is_one_models_failure_on_every_rank(tiny_model_dir, tmp_path, held_claim):
    """Under torchrun, a model whose run another job holds (its claim refused on rank 0 only): that rank raised
    alone, the job ended with no --json document, and the other models never ran (red-team round 21: the claim
    in the cache; round 22: the run folder's own, which meets jobs of other caches and hosts). Every rank now
    reports that model failed and goes on to the next, as one process does."""
    import fcntl

    from sandbox import cache_root

    model = str(tiny_model_dir("gpt2"))
    args = ["--limit", "1", "--max-new-tokens", "4", "--device", "cpu", "--threads", "1", "--no-leaderboard",
            "--timeout", "5", "--output", str(tmp_path / "runs")]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                                                      os.environ.get("PYTHONPATH")])))
    before = set((cache_root() / "claims").rglob("*.rank0")) if (cache_root() / "claims").exists() else set()
    subprocess.run([sys.executable, "-m", "evalsuite", "run", "--models", model, "--quiet", *args], env=env,
                   check=True, capture_output=True, timeout=120)  # leaves the run's claim file, released
    held = []
    claimed = (set((cache_root() / "claims").rglob("*.rank0")) - before if held_claim == "cache"
               else set((tmp_path / "runs").glob("*/.claim.rank0")))
    for path in claimed:  # the run another job now holds
        handle = open(path, "a+")  # noqa: SIM115 - held until the end of the test
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(handle)
    assert held
    env.update(WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    ranks = [subprocess.Popen([sys.executable, "-m", "evalsuite", "run", "--models", f"{model},reference", "--json",
                               "--quiet", *args], env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    try:
        outputs = [rank.communicate(timeout=180) for rank in ranks]
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
        for handle in held:
            handle.close()
    document = json.loads(outputs[0][0])
    assert [score["model"] for score in document["results"]] == ["reference"], outputs[0][1][-2000:]
    assert [failure["model"] for failure in document["failures"]] == [Path(model).name]
    assert "another evalsuite process" in document["failures"][0]["error"]
    assert [rank.returncode for rank in ranks] == [2, 0] and "Traceback" not in outputs[0][1] + outputs[1][1]
