"""A model split over GPUs by the planner against the same model placed another way: the split's strategy, the
GPUs it used, its tokens/s and peak memory per GPU, and how many greedy completions are identical.

    python benchmarks/gpu/compare_runs.py NAME SPLIT_DIR REFERENCE_DIR --peak FILE --want-gpus 4 --json OUT

SPLIT_DIR and REFERENCE_DIR are ``evalsuite run --output`` folders; --peak is the file ``watch_memory`` (common.sh)
wrote while the split ran. Prints one line (``NAME: ok`` or ``NAME: FAILED``) and writes the JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def run_folder(root: Path) -> tuple[dict | None, dict[tuple[str, int], str]]:
    """The run's record and its raw completions by (task, sample)."""
    record = next(root.glob("*/record.json"), None)
    rows: dict[tuple[str, int], str] = {}
    for path in root.glob("*/completions*.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[(row["task_id"], row["completion_id"])] = row["raw_completion"]
    return (json.loads(record.read_text()) if record else None), rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name")
    parser.add_argument("split", type=Path)
    parser.add_argument("reference", type=Path)
    parser.add_argument("--peak", type=Path)
    parser.add_argument("--want-gpus", type=int, default=0, help="the split must use this many GPUs (0: any)")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    split, split_rows = run_folder(args.split)
    reference, reference_rows = run_folder(args.reference)
    if split is None or reference is None:
        print(f"{args.name}: FAILED (no record: split {split is not None}, reference {reference is not None})")
        args.json.write_text(json.dumps({"status": "FAILED"}))
        return 0
    placement = split["model"].get("placement", {})
    devices = placement.get("plan", {}).get("device_map_summary", {})
    gpus = sorted(d for d in devices if str(d).startswith("cuda") or str(d).isdigit())
    same = sum(split_rows.get(key) == value for key, value in reference_rows.items())
    peak = args.peak.read_text().strip() if args.peak and args.peak.exists() else ""
    ok = (placement.get("strategy") == "multi-gpu" and same == len(reference_rows) > 0
          and (not args.want_gpus or len(gpus) == args.want_gpus))
    result = {"status": "ok" if ok else "FAILED", "strategy": placement.get("strategy"), "gpus": gpus,
              "device_map_summary": devices, "peak": peak, "identical": same, "of": len(reference_rows),
              "tokens_per_s": split["generation_stats"]["tokens_per_s"],
              "reference_tokens_per_s": reference["generation_stats"]["tokens_per_s"],
              "reference_strategy": reference["model"].get("placement", {}).get("strategy"),
              "load_s": split["timings_s"]["load"], "reference_load_s": reference["timings_s"]["load"]}
    print(f"{args.name}: {result['status']}  strategy {result['strategy']} on {len(gpus)} GPU(s)  tok/s "
          f"{result['tokens_per_s']:.1f} (reference, {result['reference_strategy']}: "
          f"{result['reference_tokens_per_s']:.1f})  load {result['load_s']:.0f} s  peak {peak}  greedy "
          f"{same}/{len(reference_rows)} identical  device map {json.dumps(devices)[:160]}")
    args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
