"""Writes MBPP's ``full`` test split in the hub dataset's own format, for runs and tests without the hub.

    python benchmarks/build_mbpp_data.py mbpp.jsonl [--out tests/data/mbpp/full/test-00000-of-00001.parquet]

Input: ``mbpp.jsonl`` as google-research publishes it (github.com/google-research/google-research, ``mbpp/``;
974 rows, one JSON object a line; CRLF or LF line endings). The hub dataset ``google-research-datasets/mbpp``
(what bigcode-evaluation-harness and evalsuite load as ``mbpp``) was made from that file by its loading script
(the ``full`` config: ``task_id`` 1-10 ``prompt``, 11-510 ``test``, 511-600 ``validation``, 601-974 ``train``) and
later converted to parquet. The build checks the file against what the hub card records of it (``dataset_info``:
``download_size`` 563,743 bytes, and each split's Arrow byte count and row count) and stops if anything differs;
so the rows written are the hub's rows. google-research's older version of the file (563,537 bytes) differs in
task 341 ("convert the given set into tuples", ``tuple(s)``; the hub has "ordered tuples", ``tuple(sorted(s))``).

Output: the ``test`` split (500 rows, task ids 11-510 in file order, as the hub's ``full/test-*.parquet``) with the
hub's features: ``task_id`` int32, ``text``, ``code``, ``test_list`` (list of strings), ``test_setup_code``,
``challenge_test_list`` (list of strings). Loaded with ``--task-data mbpp=<file>``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "data" / "mbpp" / "full" / "test-00000-of-00001.parquet"

# The hub card of google-research-datasets/mbpp (README.md dataset_info, config "full")
HUB_DOWNLOAD_SIZE = 563_743
HUB_SPLITS = {"prompt": ((1, 10), 10, 4_550), "test": ((11, 510), 500, 244_104),
              "validation": ((511, 600), 90, 42_405), "train": ((601, 974), 374, 176_879)}
FIELDS = ("task_id", "text", "code", "test_list", "test_setup_code", "challenge_test_list")


def features():
    import datasets

    return datasets.Features({"task_id": datasets.Value("int32"), "text": datasets.Value("string"),
                              "code": datasets.Value("string"), "test_list": datasets.Sequence(datasets.Value("string")),
                              "test_setup_code": datasets.Value("string"),
                              "challenge_test_list": datasets.Sequence(datasets.Value("string"))})


def build(source: Path, out: Path) -> dict:
    import datasets

    raw = source.read_bytes()
    text = raw.replace(b"\r\n", b"\n")
    if not text.endswith(b"\n"):
        text += b"\n"
    if len(text) != HUB_DOWNLOAD_SIZE:
        raise SystemExit(f"{source}: {len(text)} bytes with LF line endings, the hub's file has {HUB_DOWNLOAD_SIZE}")
    rows = [json.loads(line) for line in text.decode("utf-8").splitlines() if line.strip()]
    checked = {}
    for split, ((low, high), count, nbytes) in HUB_SPLITS.items():
        part = [{name: row[name] for name in FIELDS} for row in rows if low <= row["task_id"] <= high]
        table = datasets.Dataset.from_list(part, features=features())
        if len(table) != count or table.data.nbytes != nbytes:
            raise SystemExit(f"{split}: {len(table)} rows, {table.data.nbytes} bytes; the hub card says "
                             f"{count} rows, {nbytes} bytes")
        checked[split] = {"rows": count, "arrow_bytes": nbytes}
        if split == "test":
            test = table
    out.parent.mkdir(parents=True, exist_ok=True)
    test.to_parquet(str(out))
    from evalsuite.tasks.datasets_loader import rows_sha256

    return {"source": str(source), "source_sha256_lf": hashlib.sha256(text).hexdigest(), "out": str(out),
            "out_sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
            "rows_sha256": rows_sha256([dict(r) for r in test]), "splits_checked": checked}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="google-research's mbpp.jsonl")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(json.dumps(build(args.source, args.out), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
