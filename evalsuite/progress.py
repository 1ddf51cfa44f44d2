"""Progress bars for long stages: rate and ETA on stderr, silent in quiet mode or when disabled.

Completions often arrive in bursts (a whole batch at once after seconds of silence). A bar that refreshes at
most every half second shows the first completion of a burst with an ETA extrapolated from it alone (a CPU run
said 17 minutes for a 75-second job), so the bar refreshes on every update, and the rate is the average
since the start (``smoothing=0``), not a moving average over the last, instantaneous, updates.
"""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress_bar(total: int, desc: str, unit: str, enabled: bool = True) -> tqdm:
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr, dynamic_ncols=True,
                smoothing=0, mininterval=0, miniters=1)
