"""A finished ``evalsuite run --preset evalplus`` (humaneval-plus or mbpp-plus) against ``evalplus.evaluate`` on the
very programs it executed: verdicts sample for sample, base and plus, and pass@1 side by side.

The programs are the run's own (``completions.jsonl``): under instruct style the sanitized answer alone, under base
style the task's prompt + the completion, as evalsuite ran them; EvalPlus gets them as ``solution`` rows. Its data is
the run's data file (``record.json``: task provenance), cut to the run's problems (``evalplus.evaluate`` wants a
sample for every problem of its data), through ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH``.

    python benchmarks/evalplus_real_outputs.py RUN_DIR [RUN_DIR ...] [--json benchmarks/results/evalplus_real.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def compare_run(run_dir: Path) -> dict[str, Any]:
    from evalsuite.tasks.evalplus_tasks import for_evaluation
    from evalsuite.tasks.task import Task

    record = json.loads((run_dir / "record.json").read_text())
    task_name = record["task"]["name"]
    data_file = Path(record["task"]["provenance"]["file"])
    stub = Task(name=task_name)
    stub.data_path = data_file  # type: ignore[attr-defined]
    task = for_evaluation(stub, "evalplus")
    problems = {p.task_id: p for p in task.problems()}
    style = record["prompt"]["style"]
    completions = read_jsonl(run_dir / "completions.jsonl")
    results = {(r["task_id"], r["completion_id"]): r for r in read_jsonl(run_dir / "results.jsonl")}
    wanted = {c["task_id"] for c in completions}
    blob = data_file.read_bytes()
    raw = (gzip.decompress(blob) if data_file.suffix == ".gz" else blob).decode("utf-8")
    rows = [line for line in raw.splitlines() if line.strip() and json.loads(line)["task_id"] in wanted]
    order = sorted(completions, key=lambda c: (list(problems).index(c["task_id"]), c["completion_id"]))
    solutions = [c["completion"] if style == "instruct" else problems[c["task_id"]].prompt + c["completion"]
                 for c in order]
    dataset = "humaneval" if task_name == "humaneval-plus" else "mbpp"
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data.jsonl"
        data.write_text("\n".join(rows) + "\n")
        samples = Path(folder) / "samples.jsonl"
        samples.write_text("".join(json.dumps({"task_id": c["task_id"], "solution": s}) + "\n"
                                   for c, s in zip(order, solutions)))
        env = dict(os.environ, HUMANEVAL_OVERRIDE_PATH=str(data), MBPP_OVERRIDE_PATH=str(data))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "evalplus.evaluate", "--dataset", dataset, "--samples", str(samples),
                        "--i_just_wanna_run", "--parallel", "1"], check=True, env=env, capture_output=True, cwd=folder)
        evalplus_s = time.perf_counter() - started
        peer = json.loads((Path(folder) / "samples_eval_results.json").read_text())["eval"]
    peer_iter = {task_id: iter(rows) for task_id, rows in peer.items()}
    cases = []
    for completion in order:
        mine = results[(completion["task_id"], completion["completion_id"])]
        theirs = next(peer_iter[completion["task_id"]])
        case = {"task_id": completion["task_id"], "completion_id": completion["completion_id"],
                "evalsuite": {"base": mine["sets"]["base"]["status"], "plus": mine["sets"]["plus"]["status"],
                              "result": mine["result"]},
                "evalplus": {"base": theirs["base_status"], "plus": theirs["plus_status"]}}
        case["base_pass_agree"] = (case["evalsuite"]["base"] == "pass") == (theirs["base_status"] == "pass")
        case["plus_pass_agree"] = mine["passed"] == (theirs["base_status"] == theirs["plus_status"] == "pass")
        case["status_agree"] = (case["evalsuite"]["base"] == theirs["base_status"]
                                and case["evalsuite"]["plus"] == theirs["plus_status"])
        cases.append(case)
    n = len(cases)
    return {
        "run": run_dir.name, "model": record["model"]["display_name"], "task": task_name, "style": style,
        "data_sha256": record["task"]["dataset_sha256"], "samples": n,
        "pass@1": {"evalsuite": {"base": sum(c["evalsuite"]["base"] == "pass" for c in cases) / n,
                                 "plus": sum(results[(c["task_id"], c["completion_id"])]["passed"] for c in cases) / n},
                   "evalplus": {"base": sum(c["evalplus"]["base"] == "pass" for c in cases) / n,
                                "plus": sum(c["evalplus"]["base"] == c["evalplus"]["plus"] == "pass"
                                            for c in cases) / n}},
        "agree": {"base_pass": sum(c["base_pass_agree"] for c in cases),
                  "plus_pass": sum(c["plus_pass_agree"] for c in cases),
                  "status": sum(c["status_agree"] for c in cases)},
        "evalplus_s": round(evalplus_s, 1),
        "disagreements": [c for c in cases
                          if not (c["base_pass_agree"] and c["plus_pass_agree"] and c["status_agree"])],
        "cases": cases,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import evalplus

    reports = [compare_run(run) for run in args.runs]
    for report in reports:
        print(json.dumps({k: v for k, v in report.items() if k != "cases"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "evalplus": evalplus.__version__,
                                         "python": sys.version.split()[0], "runs": reports}, indent=1) + "\n")
    return 0 if all(r["agree"]["base_pass"] == r["agree"]["plus_pass"] == r["samples"] for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
