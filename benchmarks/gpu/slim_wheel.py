"""Repack a wheel without the native libraries the lent GPU image cannot load, so it fits one device call.

    python benchmarks/gpu/slim_wheel.py IN.whl OUT_DIR --keep 'libbitsandbytes_cuda13*' --keep 'libbitsandbytes_cpu*'

Every member whose name matches --drop (default: '*.so') is left out unless it also matches a --keep pattern;
RECORD is rewritten (sha256 and size of each kept file), so pip installs the result like the original. Used for
bitsandbytes 0.50.2 (41 MiB: one library per CUDA/ROCm/XPU version; torch 2.11+cu130 there loads
libbitsandbytes_cuda130.so), which with the SmolLM2 GGUF would otherwise need a third call.
"""

from __future__ import annotations

import argparse
import base64
import csv
import fnmatch
import hashlib
import io
import zipfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheel", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--drop", action="append", default=None, help="fnmatch on the base name (default *.so)")
    parser.add_argument("--keep", action="append", default=[], help="fnmatch on the base name, wins over --drop")
    args = parser.parse_args()
    drop = args.drop or ["*.so"]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / args.wheel.name
    kept, dropped = [], []
    with zipfile.ZipFile(args.wheel) as src:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        rows = []
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                base = info.filename.rsplit("/", 1)[-1]
                if info.filename == record_name:
                    continue
                if any(fnmatch.fnmatch(base, p) for p in drop) and not any(fnmatch.fnmatch(base, p) for p in args.keep):
                    dropped.append(info.filename)
                    continue
                data = src.read(info)
                dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                rows.append([info.filename, f"sha256={digest}", str(len(data))])
                kept.append(info.filename)
            rows.append([record_name, "", ""])
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerows(rows)
            dst.writestr(record_name, buffer.getvalue())
    print(f"{out}: {out.stat().st_size / 2**20:.1f} MiB (was {args.wheel.stat().st_size / 2**20:.1f}); "
          f"dropped {len(dropped)}: {', '.join(d.rsplit('/', 1)[-1] for d in dropped)}")


if __name__ == "__main__":
    main()
