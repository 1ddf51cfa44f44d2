"""Progress bars for long stages: rate and ETA on stderr, silent in quiet mode or when disabled.

Completions often arrive in bursts (a whole batch at once after seconds of silence). A bar that refreshes at
most every half second shows the first completion of a burst with an ETA extrapolated from it alone (a CPU run
said 17 minutes for a 75-second job), so the bar refreshes on every update, and the rate is the average
since the start (``smoothing=0``), not a moving average over the last, instantaneous, updates.
"""

from __future__ import annotations

import sys
import time

from tqdm import tqdm

from evalsuite.untrusted import visible


def progress_bar(total: int, desc: str, unit: str, enabled: bool = True) -> tqdm:
    """``desc`` names a task or model, which plugins and users choose: shown escaped (no control reaches the
    terminal)."""
    return tqdm(total=total, desc=visible(desc), unit=unit, disable=not enabled, file=sys.stderr, dynamic_ncols=True,
                smoothing=0, mininterval=0, miniters=1)


class TokenProgress:
    """The generation bar in tokens as well as completions: a CPU run whose first completion takes minutes
    still shows, within seconds, the tokens decoded, the rate and an ETA (a bar stuck at 0/5 for
    15 minutes). Backends that see tokens as they are decoded call :meth:`on_tokens`; for the others the
    completions' own token counts are used."""

    REFRESH_S = 1.0
    SLOW_AFTER_S = 20.0  # judge the rate only once it means something
    SLOW_FACTOR = 4.0  # the speed model is rough (~2-3x): warn only well below it

    def __init__(self, bar: tqdm, total: int, max_new_tokens: int, expected_tokens_per_s: float | None = None):
        self.bar, self.total, self.max_new_tokens = bar, total, max_new_tokens
        self.expected = expected_tokens_per_s
        self.slow_warning: str | None = None  # said once, and kept for the run record
        self.started = time.perf_counter()
        self.streamed = 0  # tokens reported by the backend while decoding (running rows included)
        self.finished_tokens = 0  # tokens of the completions made so far
        self.finished_lengths: list[int] = []  # each one's, for what a longer running one may still take
        self.completions = 0
        self._shown = 0.0

    def on_tokens(self, count: int) -> None:
        self.streamed += count
        self._refresh()

    def on_completion(self, num_tokens: int) -> None:
        self.completions += 1
        self.finished_tokens += num_tokens
        self.finished_lengths.append(num_tokens)
        self.bar.update(1)
        self._refresh(force=True)

    @property
    def tokens(self) -> int:
        return max(self.streamed, self.finished_tokens)

    def rate(self) -> float:
        return self.tokens / max(time.perf_counter() - self.started, 1e-9)

    PRIOR_WEIGHT = 4  # completions' worth of belief in "anywhere between its length now and the limit"
    SETTLE_S = 1.0  # no ETA before, unless a completion is out: the rate still holds the first prefill's wait

    def eta_s(self) -> float | None:
        """Seconds left: the tokens still expected over the rate so far. An unfinished completion of length L is
        expected to end as the finished ones longer than L did, pulled towards the middle of L and the token limit
        while few did: the first to finish are the short ones, and their mean alone said "1 s" with 8 s to go."""
        rate = self.rate()
        if rate <= 0 or not self.completions and time.perf_counter() - self.started < self.SETTLE_S:
            return None
        left = self.total - self.completions
        if left <= 0:
            return 0.0
        if not self.streamed:  # a backend that sees no token before its completion ends (a server): nothing says
            # how far the running ones are, and "halfway to the limit" said ~8 min of a 10 s job; completions' pace
            return left * (time.perf_counter() - self.started) / self.completions if self.completions else None
        running = max(self.tokens - self.finished_tokens, 0)  # tokens of completions not finished yet
        so_far = running / left
        longer = [length for length in self.finished_lengths if length > so_far]
        prior = (so_far + self.max_new_tokens) / 2
        expected = (sum(longer) + self.PRIOR_WEIGHT * prior) / (len(longer) + self.PRIOR_WEIGHT)
        expected = min(max(expected, so_far + 1), self.max_new_tokens)
        return max(left * expected - running, left) / rate

    def _refresh(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._shown < self.REFRESH_S:
            return
        self._shown = now
        eta = self.eta_s()
        left = "" if eta is None else f", ETA ~{_duration(eta)}"
        self.bar.set_postfix_str(f"{self.tokens:,} tok, {self.rate():,.1f} tok/s{left}", refresh=True)
        self._check_slow(now)

    def _check_slow(self, now: float) -> None:
        if self.slow_warning or not self.expected or now - self.started < self.SLOW_AFTER_S:
            return
        rate = self.rate()
        if rate * self.SLOW_FACTOR >= self.expected:
            return
        self.slow_warning = slow_rate_warning(rate, self.expected)
        self.bar.write(f"warning: {self.slow_warning}", file=sys.stderr)


def slow_rate_warning(rate: float, expected: float) -> str:
    """Why a CPU run may decode far below the expected rate: the usual cause is cores other jobs keep busy,
    which stalls every step of torch's threads (0.84 tokens/s where ~40 were expected)."""
    import torch

    from evalsuite.devices import load_average, usable_cores

    cores, load, threads = usable_cores(), load_average(), torch.get_num_threads()
    return (f"decoding at {rate:,.2f} tokens/s, {expected / max(rate, 1e-9):.0f}x below the ~{expected:,.0f} "
            f"expected for this model on {threads} CPU thread(s); likely cause: other processes keep the cores "
            f"busy (load average {load:.1f} on {cores} cores); "
            + ("try --threads 1, or a quieter machine" if threads > 1 else "a quieter machine would help"))


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
