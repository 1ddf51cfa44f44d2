"""A CPU run a person can watch and interrupt, on a machine whose cores other jobs keep busy (issue 23).

The real SmolLM2-135M-Instruct GGUF, ``evalsuite run --limit 5`` as a new user types it, with one busy loop per
core started by this script (as in selfcheck_under_load.py):

1. loaded: the run's progress line (stderr) is read as it is written: when does it first show completions,
   tokens/s and an ETA?
2. loaded: ``kill -INT`` after ``--interrupt-after`` seconds (default 120); the completions saved by then are
   counted, and the record's invocation says ``interrupted``;
3. loaded: the same command again: it must generate only the rest (``completions_resumed`` = saved);
4. decoding rate, quiet and loaded, of the default path (evalsuite's engine on CPU) and of plain transformers
   ``generate`` (``--engine transformers``) with the same thread count, ``--limit`` problems each, greedy.

    .venv/bin/python benchmarks/cpu_run_under_load.py   # table on stdout, JSON in benchmarks/results/cpu_run_under_load.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cpu_run_under_load.json"
BUSY_LOOP = "while True:\n    pass\n"
PROGRESS = re.compile(r"(\d+)/(\d+) .*?([\d,.]+) tok, ([\d,.]+) tok/s(?:, ETA ~([^\]\r\n]+))?")


def smollm2() -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from real_models import smollm2_gguf

    return smollm2_gguf()


class BusyCores:
    """One pure-Python busy loop per core, for the duration of a ``with`` block."""

    def __enter__(self) -> "BusyCores":
        cores = len(os.sched_getaffinity(0))
        self.procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(cores)]
        time.sleep(2.0)
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def command(model: Path, output: Path, limit: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "evalsuite", "run", "--models", str(model), "--limit", str(limit),
            "--output", str(output), "--no-leaderboard", *extra]


def watch(cmd: list[str], interrupt_after: float | None) -> dict:
    """Run ``cmd``, reading its progress line as it is written; SIGINT after ``interrupt_after`` seconds."""
    started = time.monotonic()
    # SIGINT back to its default in the child: a script started in the background (nohup, &) inherits it
    # ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first: dict[str, float] = {}
    updates: list[tuple[float, str]] = []

    def read() -> None:
        buffer = ""
        while True:
            chunk = proc.stderr.read(1)
            if not chunk:
                return
            if chunk not in "\r\n":
                buffer += chunk
                continue
            match = PROGRESS.search(buffer)
            now = time.monotonic() - started
            if match:
                updates.append((round(now, 1), buffer.strip()[-120:]))
                first.setdefault("tokens_per_s_shown_s", now)
                if match.group(5):
                    first.setdefault("eta_shown_s", now)
                if int(match.group(1)) > 0:
                    first.setdefault("first_completion_s", now)
            buffer = ""

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    interrupted = False
    while proc.poll() is None:
        if interrupt_after is not None and not interrupted and time.monotonic() - started >= interrupt_after:
            proc.send_signal(signal.SIGINT)
            interrupted = True
        time.sleep(0.2)
    reader.join(timeout=5)
    return {"exit_status": proc.returncode, "wall_s": round(time.monotonic() - started, 1),
            "interrupted": interrupted, **{k: round(v, 1) for k, v in first.items()},
            "progress_samples": updates[:: max(1, len(updates) // 12)]}


def record_of(output: Path) -> dict:
    (run_dir,) = [p for p in output.iterdir() if p.is_dir()]
    return json.loads((run_dir / "record.json").read_text())


def saved_completions(output: Path) -> int:
    (run_dir,) = [p for p in output.iterdir() if p.is_dir()]
    path = run_dir / "completions.jsonl"
    return sum(1 for line in path.read_text().splitlines() if line.endswith("}")) if path.exists() else 0


def rate(model: Path, limit: int, engine: str, threads: int, tmp: Path) -> dict:
    output = tmp / f"rate-{engine}-{threads}-{time.monotonic_ns()}"
    done = subprocess.run(command(model, output, limit, "--quiet", "--engine", engine, "--threads", str(threads)),
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return {"engine": engine, "threads": threads, "error": done.stderr.strip().splitlines()[-1:]}
    record = record_of(output)
    stats = record["generation_stats"]
    return {"engine": engine, "threads": threads, "ran": record["model"].get("engine", {}),
            "tokens": stats["tokens_generated_total"], "generate_s": record["timings_s"]["generate"],
            "tokens_per_s": stats["tokens_per_s"], "load_average": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--interrupt-after", type=float, default=120.0)
    parser.add_argument("--rate-limit", type=int, default=3, help="problems per rate measurement")
    parser.add_argument("--skip-quiet", action="store_true", help="no quiet measurements (a shared machine)")
    args = parser.parse_args()
    model = smollm2()
    report: dict = {"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
                    "cores": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                    "model": model.name, "limit": args.limit, "interrupt_after_s": args.interrupt_after}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        output = tmp / "runs"
        with BusyCores():
            report["load_average_at_start"] = os.getloadavg()[0]
            first = watch(command(model, output, args.limit), args.interrupt_after)
            first["saved_completions"] = saved_completions(output)
            first["record_invocations"] = record_of(output).get("invocations")
            report["interrupted_run"] = first
            rerun = watch(command(model, output, args.limit), None)
            record = record_of(output)
            rerun["completions_resumed"] = record["generation_stats"]["completions_resumed"]
            rerun["completions_generated_now"] = record["generation_stats"]["completions_generated_now"]
            rerun["invocations"] = record.get("invocations")
            rerun["threads"] = record["model"].get("cpu_threads")
            report["rerun"] = rerun
            threads = rerun["threads"] or 1
            report["loaded_rates"] = [rate(model, args.rate_limit, engine, threads, tmp)
                                      for engine in ("auto", "transformers")]
        if not args.skip_quiet:
            time.sleep(5)
            report["quiet_rates"] = [rate(model, args.rate_limit, engine, threads, tmp)
                                     for engine in ("auto", "transformers")]
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    first, rerun = report["interrupted_run"], report["rerun"]
    print(f"| step | figure |\n|---|---|\n"
          f"| progress shows tokens/s | after {first.get('tokens_per_s_shown_s')} s |\n"
          f"| progress shows an ETA | after {first.get('eta_shown_s')} s |\n"
          f"| first completion | after {first.get('first_completion_s')} s |\n"
          f"| kill -INT at {args.interrupt_after:.0f} s | {first['saved_completions']} completions kept "
          f"(exit {first['exit_status']}) |\n"
          f"| rerun | resumed {rerun['completions_resumed']}, generated {rerun['completions_generated_now']} |")
    for label in ("loaded_rates", "quiet_rates"):
        for row in report.get(label, []):
            print(f"| {label} {row['engine']} ({row['threads']} threads) | {row.get('tokens_per_s')} tok/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
