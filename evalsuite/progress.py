"""Progress bars for long stages: rate and ETA on stderr, silent in quiet mode or when disabled."""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress_bar(total: int, desc: str, unit: str, enabled: bool = True) -> tqdm:
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr, dynamic_ncols=True,
                smoothing=0.1, mininterval=0.5)
