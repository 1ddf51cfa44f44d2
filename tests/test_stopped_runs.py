"""A job stopped by SIGTERM or SIGHUP (a scheduler's time limit, ``docker stop``, a closed terminal) loses
nothing: the rows finished so far are kept, the record says interrupted, the exit status names the signal, and
the rerun generates only the rest.

Every sample of the run is one row of a single ``generate`` batch, so the signal lands inside that batch: the
rows that ended before it are on disk (each saved the moment it ended) and counted by the progress line, the
others are not made up."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
N, LIMIT = 12, 3
TOTAL = N * LIMIT  # one batch: --batch-size TOTAL


def run_command(model: Path, quiet: bool = True) -> list[str]:
    return [sys.executable, "-m", "evalsuite", "run", "--models", str(model), "--limit", str(LIMIT), "--n", str(N),
            "--temperature", "0.8", "--max-new-tokens", "400", "--device", "cpu", "--batch-size", str(TOTAL),
            "--threads", "1", "--no-leaderboard"] + (["--quiet"] if quiet else [])


def completions(cwd: Path) -> list[dict]:
    found = list(cwd.glob("runs/*/completions.jsonl"))
    if not found:
        return []
    return [json.loads(line) for line in found[0].read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_run_keeps_its_rows_and_resumes(tiny_model_dir, tmp_path, signum):
    model = tiny_model_dir("gpt2")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    process = subprocess.Popen(run_command(model, quiet=False), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(completions(tmp_path)) < 4 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be stopped"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err[-2000:]
    assert f"interrupted by {signal.Signals(signum).name}" in err and "Traceback" not in err
    kept = completions(tmp_path)
    assert 4 <= len(kept) < TOTAL  # rows of the batch were still decoding: the signal came mid-batch
    counted = re.findall(rf"(\d+)/{TOTAL} \[", err.split("generate ", 1)[1].split("interrupted by")[0])
    assert counted and int(counted[-1]) == len(kept)  # the progress line counted each row as it was saved
    record = json.loads(next(tmp_path.glob("runs/*/record.json")).read_text())
    assert record["status"] == "interrupted" and record["invocations"][-1]["status"] == "interrupted"
    assert record["invocations"][-1]["completions_generated"] == len(kept)

    rerun = subprocess.run(run_command(model), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    record = json.loads(next(tmp_path.glob("runs/*/record.json")).read_text())
    assert record["status"] == "complete"
    assert record["generation_stats"]["completions_generated_now"] == TOTAL - len(kept)
    rows = completions(tmp_path)
    assert len(rows) == TOTAL and {(r["task_id"], r["completion_id"]) for r in kept} <= \
        {(r["task_id"], r["completion_id"]) for r in rows}


def test_a_stop_signal_waits_for_the_row_being_saved_and_counted():
    """A signal landing between a row's write and its count is delivered right after both, through the handler
    that was in place (here one that records when it ran)."""
    from evalsuite.runs.stops import stops_held

    steps: list[str] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: steps.append("handled"))
    try:
        with stops_held():
            steps.append("written")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the signal has arrived by now: it must not be handled inside the step
            steps.append("counted")
        assert steps == ["written", "counted", "handled"]
        assert signal.getsignal(signal.SIGTERM) is not None and steps.count("handled") == 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_stop_while_a_row_is_being_saved_still_hands_over_the_rows_that_had_ended(tiny_model_dir):
    """Every row of this batch ends at the same step (no stop sequences): the stop comes while the caller saves
    the first, and the backend still hands over the other seven, each as an uninterrupted run makes it."""
    from evalsuite.generation import GenerationOptions, load_generator
    from evalsuite.generation.options import HFOptions
    from evalsuite.models.options import LoadingOptions
    from evalsuite.records import GenerationRequest, SamplingParams
    from evalsuite.runs.generate import finished_before

    generator = load_generator(str(tiny_model_dir("gpt2")), GenerationOptions(
        loading=LoadingOptions(device="cpu"), hf=HFOptions(batch_size=8, engine="transformers", threads=1)))
    requests = [GenerationRequest(task_id=f"t/{i}", prompt=f"def f{i}():\n", sample_indices=(0,), stop_sequences=())
                for i in range(8)]
    params = SamplingParams(max_new_tokens=12)
    clean = {c.task_id: c for c in generator.generate(requests, params)}
    stream = generator.generate(requests, params)
    first = next(stream)
    handed = list(finished_before(stream, KeyboardInterrupt()))
    kept = [first, *handed]
    assert sorted(c.task_id for c in kept) == sorted(clean) and all(c == clean[c.task_id] for c in kept)
    generator.close()


@pytest.mark.parametrize("threaded", [True, False])
def test_a_streamed_call_hands_over_its_ended_rows_in_either_mode(threaded):
    """On the CPU the call runs in a worker thread and rows come as they end; on a GPU it runs in the caller's
    thread and rows come once it returns. Stopped mid-call, both hand over every row that had ended."""
    from evalsuite.generation.hf.streaming import BatchDone, RowEnded, StreamedCall

    def finishing() -> str:
        streamed.post(RowEnded(0, [1]))
        streamed.post(RowEnded(1, [2]))
        return "output"

    streamed = StreamedCall(finishing, lambda: None, threaded=threaded)
    with streamed:
        events = list(streamed.events())
    assert [type(e) for e in events] == [RowEnded, RowEnded, BatchDone] and events[-1].output == "output"

    def stopped() -> str:
        stopping.post(RowEnded(3, [4]))
        raise KeyboardInterrupt

    stopping = StreamedCall(stopped, lambda: None, threaded=threaded)
    seen: list = []
    with stopping:
        with pytest.raises(KeyboardInterrupt):
            for event in stopping.events():
                seen.append(event)
        handed = seen + stopping.stop()  # read before the stop, or handed over by it
    assert [e.index for e in handed] == [3]


def test_the_resuming_line_goes_to_stderr_never_into_the_table_on_stdout(tmp_path, capsys, monkeypatch):
    """The rerun says what it kept on stderr, with the progress; stdout holds the table (or the JSON) alone."""
    from evalsuite.cli import main

    monkeypatch.chdir(tmp_path)
    command = ["run", "--models", "reference", "--limit", "3", "--no-leaderboard", "--allow-unsandboxed"]
    assert main(command) == 0
    (saved,) = tmp_path.glob("runs/*/completions.jsonl")
    saved.write_text(saved.read_text().splitlines(keepends=True)[0])  # as if stopped after the first row
    capsys.readouterr()
    assert main(command) == 0
    out, err = capsys.readouterr()
    assert "resuming" not in out and out.lstrip().startswith("model ")
    assert re.search(r"resuming \S+: 1 completions kept, 2 to generate", err)
    saved.write_text(saved.read_text().splitlines(keepends=True)[0])
    assert main([*command, "--quiet"]) == 0
    assert "resuming" not in "".join(capsys.readouterr())  # --quiet: the table, and warnings only


@pytest.mark.skipif(__import__("sandbox").detect_isolation() == "none",
                    reason="needs namespace isolation (bubblewrap) to execute the samples")
def test_a_stopped_multi_model_command_still_reports_the_finished_models_in_json(tiny_model_dir, tmp_path):
    """CI reads ``--json``: stopped while the second of three models generates, the first's score (final, on the
    leaderboard) is still printed, with what was running and what had not started; the exit status names the
    signal."""
    from evalsuite.runs.results import validate_output

    gpt2, llama = tiny_model_dir("gpt2"), tiny_model_dir("llama")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "evalsuite", "run", "--models", f"reference,{gpt2},{llama}", "--limit",
               str(LIMIT), "--n", str(N), "--temperature", "0.8", "--max-new-tokens", "400", "--device", "cpu",
               "--batch-size", str(TOTAL), "--threads", "1", "--json", "--quiet"]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(f"runs/{gpt2.name}__*/completions.jsonl")) and time.monotonic() < deadline \
            and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be stopped"
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "interrupted by SIGTERM" in err and "Traceback" not in err
    document = json.loads(out)
    validate_output(document)
    assert [score["model"] for score in document["results"]] == ["reference"]
    assert document["results"][0]["pass_at"]["pass@1"]["value"] == 1.0
    assert document["interrupted"] == {"signal": "SIGTERM", "model": gpt2.name, "not_started": [llama.name]}
    board = json.loads((tmp_path / "leaderboard" / "leaderboard.json").read_text())
    assert [entry["model"] for entry in board["entries"]] == ["reference"]
    assert document["leaderboard"] == str(Path("leaderboard") / "leaderboard.json")


def under_stops(body: str, signum: int, handler) -> subprocess.CompletedProcess:
    """``body`` run inside the CLI's ``stops_as_interrupts`` in a fresh Python started with ``signum`` set to
    ``handler`` (as a shell or ``nohup`` would hand it over)."""
    script = ("import os, signal, time\nfrom evalsuite.cli import stops_as_interrupts\n"
              "with stops_as_interrupts():\n" + textwrap.indent(body, "    "))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env,
                          preexec_fn=lambda: signal.signal(signum, handler))


def test_a_second_ctrl_c_explains_and_a_third_quits_at_once():
    """The first Ctrl-C stops the command cleanly; one pressed while that clean-up runs no longer breaks into it
    with a traceback but says what is happening; the next quits at once (status 130)."""
    done = under_stops("try:\n"
                       "    os.kill(os.getpid(), signal.SIGINT); time.sleep(5)\n"
                       "except KeyboardInterrupt:\n"
                       "    print('stopped', flush=True)\n"
                       "os.kill(os.getpid(), signal.SIGINT); time.sleep(0.2)\n"
                       "print('cleaned up', flush=True)\n"
                       "os.kill(os.getpid(), signal.SIGINT); time.sleep(5)\n"
                       "print('never', flush=True)\n", signal.SIGINT, signal.SIG_DFL)
    assert done.returncode == 128 + signal.SIGINT, done.stderr
    assert done.stdout.split() == ["stopped", "cleaned", "up"]
    assert "press Ctrl-C again to quit at once" in done.stderr and "Traceback" not in done.stderr


def test_a_signal_the_job_was_started_ignoring_stays_ignored():
    """`nohup evalsuite run ...`: the terminal closing (SIGHUP) must not stop the job."""
    done = under_stops("os.kill(os.getpid(), signal.SIGHUP); time.sleep(0.2)\nprint('still running', flush=True)\n",
                       signal.SIGHUP, signal.SIG_IGN)
    assert done.returncode == 0 and done.stdout.strip() == "still running", done.stderr


def test_ctrl_c_twice_during_a_run_leaves_no_traceback_and_the_rerun_resumes(tiny_model_dir, tmp_path):
    model = tiny_model_dir("gpt2")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    process = subprocess.Popen(run_command(model), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while len(completions(tmp_path)) < 4 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be stopped"
    process.send_signal(signal.SIGINT)
    time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGINT, err[-2000:]
    assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]
    kept = completions(tmp_path)
    rerun = subprocess.run(run_command(model), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    record = json.loads(next(tmp_path.glob("runs/*/record.json")).read_text())
    assert record["generation_stats"]["completions_generated_now"] == TOTAL - len(kept)


@pytest.mark.parametrize("stopped_at", ["results.jsonl", "summary.json", "report.html"])
def test_a_stop_while_the_results_are_written_says_interrupted_and_the_rerun_completes(tmp_path, monkeypatch,
                                                                                       stopped_at):
    """A stop after the samples ran, while results.jsonl, summary.json or the page were written, left record.json
    saying "running" (the twentieth session's run-path round): the record says how the invocation ended."""
    import evalsuite
    import evalsuite.jsonl

    if __import__("sandbox").detect_isolation() == "none":
        pytest.skip("needs bubblewrap")
    real = evalsuite.jsonl.atomic_write_bytes

    def stop_at(path, *args, **kwargs):
        if Path(path).name == stopped_at:
            raise KeyboardInterrupt
        return real(path, *args, **kwargs)

    monkeypatch.setattr(evalsuite.jsonl, "atomic_write_bytes", stop_at)
    with pytest.raises(KeyboardInterrupt):
        evalsuite.run(models=["reference"], limit=2, output=str(tmp_path / "runs"), no_leaderboard=True, quiet=True)
    (record_path,) = (tmp_path / "runs").glob("*/record.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "interrupted" and record.get("summary") is None
    assert record["invocations"][-1]["status"] == "interrupted"
    leftover = record_path.parent / ".summary.json.k3j_x9a2"  # what a kill -9 mid-write leaves
    leftover.write_text("{")
    monkeypatch.setattr(evalsuite.jsonl, "atomic_write_bytes", real)
    again = evalsuite.run(models=["reference"], limit=2, output=str(tmp_path / "runs"), no_leaderboard=True,
                          quiet=True)
    assert again.scores[0]["pass@1"] == 1.0 and json.loads(record_path.read_text())["status"] == "complete"
    assert not leftover.exists() and (record_path.parent / ".claim.rank0").exists()



@pytest.mark.parametrize("command, said", [
    ("run", "interrupted by SIGTERM: completions written so far are kept; rerun the same command to resume"),
    ("evaluate", "interrupted by SIGTERM before it finished: rerun it (it resumes nothing; what it wrote is written "
                 "anew)"),
])
def test_what_a_stopped_command_says_it_kept_is_what_it_keeps(tmp_path, capsys, monkeypatch, command, said):
    """`evaluate` resumes nothing: stopped, it said its completions were kept and rerunning would resume (its output
    folder was empty, or held results written just before the stop)."""
    import importlib

    from evalsuite.cli import main

    def stopped(args):
        exc = KeyboardInterrupt()
        exc.signum = signal.SIGTERM  # type: ignore[attr-defined]  # as stops_as_interrupts raises it
        raise exc

    monkeypatch.setattr(importlib.import_module(f"evalsuite.cli.{command}"), "main", stopped)
    samples = tmp_path / "s.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "completion": "    return True\\n"}\n')
    argv = ["run", "--quiet"] if command == "run" else ["evaluate", str(samples), "-o", str(tmp_path / "o"), "--quiet"]
    assert main(argv) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip().splitlines()[-1] == said


@pytest.mark.parametrize("stopped_in, saved", [("save_leaderboard", False), ("write_leaderboard_pages", True)])
def test_a_stop_during_the_leaderboard_update_reports_it_as_the_file_has_it(tmp_path, capsys, monkeypatch,
                                                                               stopped_in, saved):
    """Stopped while the model's entry was being added, the ``--json`` document's ``leaderboard`` says whether the
    file holds it: before the save, null; after it (the pages being drawn), the file, which CI then reads."""
    import evalsuite.reporting.publish
    import evalsuite.reporting.store
    from evalsuite.cli import main

    if __import__("sandbox").detect_isolation() == "none":
        pytest.skip("needs bubblewrap")
    module = evalsuite.reporting.store if stopped_in == "save_leaderboard" else evalsuite.reporting.publish
    real = getattr(module, stopped_in)

    def stop(*args, **kwargs):
        if stopped_in == "write_leaderboard_pages":
            real(*args, **kwargs)  # the entry is saved; the stop comes as the pages are drawn
        raise KeyboardInterrupt

    monkeypatch.setattr(module, stopped_in, stop)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--limit", "2", "--json", "--quiet"]) == 128 + 2
    document = json.loads(capsys.readouterr().out)
    board = tmp_path / "leaderboard" / "leaderboard.json"
    held = [entry["model"] for entry in json.loads(board.read_text())["entries"]] if board.exists() else []
    assert held == (["reference"] if saved else [])
    assert document["leaderboard"] == (str(Path("leaderboard") / "leaderboard.json") if saved else None)
    assert [score["model"] for score in document["results"]] == ["reference"]


def test_a_full_disk_is_one_line_and_the_rerun_completes(tmp_path, capsys, monkeypatch):
    """The disk filling up while the results are written: one line naming the folders (no traceback), exit 1, and
    the same command once there is room finishes from what was kept."""
    import errno

    import evalsuite.jsonl
    from evalsuite.cli import main

    if __import__("sandbox").detect_isolation() == "none":
        pytest.skip("needs bubblewrap")
    real = evalsuite.jsonl.atomic_write_bytes

    def full(path, *args, **kwargs):
        if Path(path).name in ("summary.json", "record.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(evalsuite.jsonl, "atomic_write_bytes", full)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--limit", "2", "--quiet"]) == 1
    said = capsys.readouterr().err
    warning, error = said.strip().splitlines()  # the --limit warning, then the error: nothing else
    assert error.startswith("error: No space left on device writing under runs or leaderboard") and "rerun" in error
    monkeypatch.setattr(evalsuite.jsonl, "atomic_write_bytes", real)
    assert main(["run", "--limit", "2", "--quiet"]) == 0
    assert "1.000" in capsys.readouterr().out


def test_a_cache_folder_that_cannot_be_written_costs_a_warning_not_the_run(tmp_path, capsys, monkeypatch):
    """A read-only home (a container, CI): the timeout calibration and the checkpoint digests are not saved, which
    is said once each, and the run scores as usual."""
    from evalsuite.cli import main

    if __import__("sandbox").detect_isolation() == "none":
        pytest.skip("needs bubblewrap")
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # a cache folder under a file: nothing can be created there, not even as root
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(blocked / "cache"))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--limit", "2", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "1.000" in captured.out
    assert captured.err.count("warning: cannot save the timeout calibration") == 1, captured.err


def test_a_leaderboard_folder_that_takes_the_json_but_not_the_page_warns_and_keeps_the_entry(tmp_path, capsys,
                                                                                            monkeypatch):
    """leaderboard.json saved, index.html refused (the folder full): the run was reported failed, its --json
    document saying no leaderboard, though the entry was saved (red-team round 11). The page is a view: a warning."""
    import errno

    import evalsuite.reporting.publish
    from evalsuite.cli import main

    if __import__("sandbox").detect_isolation() == "none":
        pytest.skip("needs bubblewrap")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(evalsuite.reporting.publish, "write_leaderboard_views", full)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--limit", "2", "--json", "--quiet"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["leaderboard"] == str(Path("leaderboard") / "leaderboard.json") and not document.get("failures")
    assert "warning: cannot write the leaderboard's page in leaderboard (No space left on device)" in captured.err
    board = json.loads((tmp_path / "leaderboard" / "leaderboard.json").read_text())
    assert [entry["model"] for entry in board["entries"]] == ["reference"]


def test_a_ctrl_c_while_the_command_imports_is_one_line_not_a_traceback(monkeypatch, capsys):
    """A Ctrl-C in the first fraction of a second (the command's modules importing) came before the command's own
    stop handling and printed Python's KeyboardInterrupt traceback (the twenty-third session's red-team round)."""
    import evalsuite.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["run", "--models", "reference"]) == 128 + signal.SIGINT
    assert capsys.readouterr().err == "interrupted by SIGINT before the command started: nothing was written\n"


def test_a_stop_during_the_checks_before_any_model_still_prints_the_json_document(monkeypatch, capsys):
    """A stop in run's first second (its checks, before any model started) printed no --json document: the
    object that carries it was made later (the twenty-third session's red-team round)."""
    import json

    from evalsuite.cli import Stopped, main, preflight

    def stopped(*args, **kwargs):
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(preflight, "check_model_files", stopped)
    assert main(["run", "--models", "reference,other", "--json", "--quiet"]) == 128 + signal.SIGTERM
    document = json.loads(capsys.readouterr().out)
    assert document["interrupted"] == {"signal": "SIGTERM", "model": "", "not_started": ["reference", "other"]}
    assert document["results"] == []


def test_a_stop_while_run_imports_its_pipeline_still_prints_the_json_document(monkeypatch, capsys):
    """The pipeline's import (~0.1 s) came before run's stop handling: a stop there printed no --json document (the
    twenty-fourth session's run-path round: 12 of 28 timed stops)."""
    import json

    from evalsuite.cli import Stopped, main

    class StopOnImport:
        def find_spec(self, name, path=None, target=None):
            if name == "evalsuite.runs.pipeline":
                raise Stopped(signal.SIGTERM)
            return None

    monkeypatch.delitem(sys.modules, "evalsuite.runs.pipeline", raising=False)
    monkeypatch.setattr(sys, "meta_path", [StopOnImport(), *sys.meta_path])
    assert main(["run", "--models", "reference", "--json", "--quiet"]) == 128 + signal.SIGTERM
    document = json.loads(capsys.readouterr().out)
    assert document["interrupted"]["signal"] == "SIGTERM" and document["results"] == []


def test_a_stop_during_a_held_import_arrives_once_it_is_done():
    """evalsuite.signals.stops_held: the stop is raised after the block, not inside it, even with other threads
    alive (a process-directed signal may go to any of them; the full suite's earlier tests leave some)."""
    import threading

    from evalsuite.cli import Stopped, stops_as_interrupts
    from evalsuite.signals import stops_held

    seen: list[str] = []
    alive = threading.Event()
    helper = threading.Thread(target=alive.wait, daemon=True)  # a thread that does not block the signal
    helper.start()
    try:
        with stops_as_interrupts():
            try:
                with stops_held():
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.1)
                    seen.append("import done")
                time.sleep(0.1)
                seen.append("not stopped")
            except Stopped:
                seen.append("stop")
    finally:
        alive.set()
    assert seen == ["import done", "stop"]


def test_a_stop_that_lands_in_a_finalizer_is_delivered_again():
    """A SIGTERM whose handler runs inside a finalizer (a __del__, the weakref callbacks a collection runs) raised
    there, where Python can only print "Exception ignored": the stop was lost, later SIGTERMs ignored, and the run
    went on to its end with status 0 (red-team round 21). It is delivered again in the command's own flow."""
    done = under_stops("class Garbage:\n"
                       "    def __del__(self):\n"
                       "        os.kill(os.getpid(), signal.SIGTERM)\n"
                       "        time.sleep(0.2)\n"
                       "try:\n"
                       "    Garbage()\n"
                       "    time.sleep(2)\n"
                       "    print('not stopped', flush=True)\n"
                       "except KeyboardInterrupt as exc:\n"
                       "    print('stopped', type(exc).__name__, flush=True)\n", signal.SIGTERM, signal.SIG_DFL)
    assert done.stdout.split() == ["stopped", "Stopped"], done.stderr


def test_a_stop_delivered_again_wakes_a_main_thread_that_waits():
    """The stop lost in a finalizer, delivered again while the main thread waits on a queue (the server backend's
    answers): delivered as a flag, it waited for the queue (20 s, red-team round 22); as a signal, it wakes it."""
    done = under_stops("import queue\n"
                       "class Garbage:\n"
                       "    def __del__(self):\n"
                       "        os.kill(os.getpid(), signal.SIGTERM)\n"
                       "        time.sleep(0.2)\n"
                       "started = time.monotonic()\n"
                       "try:\n"
                       "    Garbage()\n"
                       "    queue.Queue().get(timeout=20)\n"
                       "except KeyboardInterrupt as exc:\n"
                       "    print('stopped', type(exc).__name__, time.monotonic() - started < 10, flush=True)\n",
                       signal.SIGTERM, signal.SIG_DFL)
    assert done.stdout.split() == ["stopped", "Stopped", "True"], done.stderr


@pytest.mark.skipif(__import__("sandbox").detect_isolation() == "none", reason="needs bubblewrap")
def test_a_stop_after_the_document_keeps_the_commands_status(tiny_model_dir, tmp_path):
    """A SIGTERM once the run's document is printed, while the interpreter shuts down (a model's libraries take
    seconds to): status 143 for a finished run, the record complete (red-team round 21). The command's own now."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    process = subprocess.Popen([sys.executable, "-m", "evalsuite", "run", "--models", str(tiny_model_dir("gpt2")),
                                "--limit", "2", "--max-new-tokens", "4", "--device", "cpu", "--quiet", "--json",
                                "--no-leaderboard", "--timeout", "5", "--output", str(tmp_path / "runs")],
                               stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    document = ""
    for line in process.stdout:  # the document, whole: the command's work is done
        document += line
        if line.startswith("}"):
            break
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)  # the interpreter shutting down (~2.8 s on a loaded 2-core machine)
    assert process.wait(timeout=60) == 0
    assert json.loads(document)["results"][0]["pass_at"]["pass@1"]["value"] == 0.0


def test_a_host_that_catches_the_commands_exit_keeps_its_signals():
    """`%run -m evalsuite` in IPython, runpy in a harness: the host catches SystemExit and goes on. The signals
    ignored for the interpreter's shutdown (and its alarm) stayed so in the host (red-team round 23: Ctrl-C
    ignored, then the host killed by SIGALRM); they are set at the interpreter's exit only."""
    script = ("import runpy, signal, sys\nsys.argv = ['evalsuite', 'tasks']\n"
              "try:\n    runpy.run_module('evalsuite', run_name='__main__', alter_sys=True)\n"
              "except SystemExit as exc:\n    print('exit', exc.code)\n"
              "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, signal.alarm(0), flush=True)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.stdout.split()[-4:] == ["exit", "0", "True", "0"], done.stderr[-2000:]
