"""A resume trusts the completion rows on disk, so each row is sealed to its run (evalsuite.runs.rundir.row_seal):
a row edited by hand or copied from another run is refused in one line instead of being scored as the model's
output; deleting it regenerates it; a row without a seal is refused alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalsuite
from evalsuite.errors import EvalsuiteError

pytestmark = pytest.mark.skipif(__import__("sandbox").detect_isolation() == "none",
                                reason="needs namespace isolation (bubblewrap) to execute the samples")


def run(output: Path, n: int = 2):
    return evalsuite.run(models=["reference"], limit=3, n=n, temperature=0.8, output=str(output),
                         no_leaderboard=True, quiet=True)


def rows_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "completions.jsonl").read_text().splitlines()]


def write_rows(folder: Path, rows: list[dict]) -> None:
    (folder / "completions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_an_edited_row_is_refused_and_deleting_it_regenerates_it(tmp_path):
    first = run(tmp_path / "runs")
    folder = first.scores[0].run_dir
    rows = rows_of(folder)
    assert all(len(row["seal"]) == 32 for row in rows)
    edited = [dict(row) for row in rows]
    edited[3]["completion"] = "    return 0\n"  # a "fix" by hand
    write_rows(folder, edited)
    with pytest.raises(EvalsuiteError, match=r"completions.jsonl:4: completion \('HumanEval/1', 1\) is not what "
                                             r"this run wrote .*delete that line to generate it again"):
        run(tmp_path / "runs")
    write_rows(folder, edited[:3] + edited[4:])
    again = run(tmp_path / "runs")
    assert again.scores[0].generated_now == 1 and again.scores[0]["pass@1"] == first.scores[0]["pass@1"] == 1.0
    assert all("seal" in row for row in rows_of(folder))  # the regenerated row too


def test_a_row_copied_from_another_run_is_refused(tmp_path):
    one = run(tmp_path / "runs", n=2).scores[0].run_dir
    other = run(tmp_path / "runs", n=3).scores[0].run_dir
    assert one != other
    rows = rows_of(one)
    rows[0] = rows_of(other)[0]  # the same task and sample index, valid in both: only its seal tells
    assert (rows[0]["task_id"], rows[0]["completion_id"]) == ("HumanEval/0", 0)
    write_rows(one, rows)
    with pytest.raises(EvalsuiteError, match="copied from another run"):
        run(tmp_path / "runs", n=2)


def test_a_row_whose_seal_was_deleted_with_an_edit_is_refused(tmp_path):
    """Deleting the seal hid a hand edit (the twentieth session's run-path round): rows written before seals were
    let through as an older evalsuite's, so an edited row without its seal was scored."""
    folder = run(tmp_path / "runs").scores[0].run_dir
    rows = rows_of(folder)
    edited = [dict(row) for row in rows]
    edited[1]["completion"] = "    return 'EDITED BY HAND'\n"
    del edited[1]["seal"]
    write_rows(folder, edited)
    with pytest.raises(EvalsuiteError, match=r"completions.jsonl:2: .* is not what this run wrote .*it has no seal"):
        run(tmp_path / "runs")
    write_rows(folder, [{k: v for k, v in row.items() if k != "seal"} for row in rows])  # every seal gone
    with pytest.raises(EvalsuiteError, match=r"completions.jsonl:1: .*it has no seal"):
        run(tmp_path / "runs")
