"""Compare the generation stage of evalsuite run records side by side (prints a table, writes JSON).

    python benchmarks/gpu/summarize_runs.py A/record.json B/record.json [...] [--completions RUNS_A RUNS_B]

Ratios are against the first record. With --completions (two run folders), also counts the completions
that are identical between them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from evalsuite.jsonl import read_jsonl  # noqa: E402


def completions(root: Path) -> dict[tuple[str, int], str]:
    return {(r["task_id"], r["completion_id"]): r["completion"]
            for path in root.glob("*/completions*.jsonl") for _, r in read_jsonl(path)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("records", nargs="+")
    parser.add_argument("--completions", nargs=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for path in args.records:
        record = json.loads(Path(path).read_text())
        if "generation_stats" not in record:
            print(f"{path}: status {record.get('status')!r}, no generation figures: {record.get('error', '')}")
            continue
        stats, timings = record["generation_stats"], record["timings_s"]
        placement = record["model"].get("placement", {})
        plan = placement.get("plan") or {}
        rows.append({"record": path, "engine": record["model"].get("engine"),
                     "strategy": placement.get("strategy"), "forced": plan.get("forced"),
                     "batch_limit": plan.get("batch_limit"), "plan_notes": plan.get("notes", []),
                     "world_size": record.get("distributed", {}).get("world_size", 1),
                     "gpus": record["environment"]["hardware"].get("gpus"),
                     "completions": stats["completions_generated_now"], "tokens": stats["tokens_generated_now"],
                     "load_s": timings["load"], "generate_s": timings["generate"], "execute_s": timings["execute"],
                     "tokens_per_s": stats["tokens_per_s"], "pass@1": record["summary"].get("pass@1"),
                     "ranks": record.get("distributed", {}).get("ranks", [])})
    print(f"{'run':<34} {'strategy':<15} {'ranks':>5} {'completions':>11} {'tokens':>9} {'load s':>7} "
          f"{'generate s':>10} {'tok/s':>9}")
    for row in rows:
        engine = row["engine"]["name"] if isinstance(row["engine"], dict) else row["engine"]
        print(f"{Path(row['record']).stem + ' (' + str(engine) + ')':<34} {str(row['strategy']):<15} "
              f"{row['world_size']:>5} {row['completions']:>11} {row['tokens']:>9} {row['load_s']:>7.1f} "
              f"{row['generate_s']:>10.1f} {row['tokens_per_s'] or 0:>9.0f}")
    for row in rows:  # each rank's own time: the slowest one is the run's (a skewed shard shows here)
        if row["ranks"]:
            ranks = row["ranks"]
            times = [r["generate_s"] for r in ranks]
            executes = ", ".join(f"{r['execute_s']:.1f}" for r in ranks)
            cpus = ", ".join(str(r.get("cpus", 0)) for r in ranks)
            print(f"  {Path(row['record']).stem} ranks' generate s: " + ", ".join(f"{t:.1f}" for t in times)
                  + f"  (slowest / fastest {max(times) / min(times):.2f}; tokens "
                  + ", ".join(f"{r['tokens_generated']:,}" for r in ranks)
                  + f"; execute s {executes}; CPUs {cpus})")
    result: dict = {"runs": rows}
    if len(rows) == 2:
        ratio = rows[1]["generate_s"] / rows[0]["generate_s"]
        speed = (rows[0]["tokens_per_s"] or 0) and (rows[1]["tokens_per_s"] or 0) / rows[0]["tokens_per_s"]
        print(f"generate time B/A = {ratio:.3f}   tokens/s B/A = {speed:.2f}")
        result.update(generate_time_ratio=ratio, tokens_per_s_ratio=speed)
    if args.completions:
        a, b = (completions(Path(p)) for p in args.completions)
        same = sum(1 for key, text in a.items() if b.get(key) == text)
        print(f"identical completions: {same}/{len(a)}")
        result["identical_completions"] = [same, len(a)]
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
