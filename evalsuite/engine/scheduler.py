"""Host-side bookkeeping for continuous batching: which sample runs in which row, when it is finished.

Samples wait in prompt order; a row freed by a finished sample is given to the next waiting one at once, so
no row decodes padding after its sample ended. Finishing is decided here from the tokens each step copied
back (asynchronously, one step behind the device): end-of-sequence, the token limit, or a stop sequence.
Stop sequences are looked for every few tokens in a decoded window; the final text is always cut at the
first stop sequence of the full decoded text, so a late or missed detection costs only a few extra steps,
never a different completion.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from evalsuite.records import Completion, GenerationRequest

# (request, prompt ids, generated ids) -> completion text before stop truncation
Decode = Callable[[GenerationRequest, Sequence[int], Sequence[int]], str]


@dataclass(eq=False)
class PromptJob:
    request: GenerationRequest
    ids: list[int]
    first_sample: int  # index of its first sample in the workload (samples of a prompt are contiguous)
    samples: list[SampleJob] = field(default_factory=list)
    slot: int = -1  # prompt cache slot while any of its samples runs
    unfinished: int = 0


@dataclass(eq=False)
class SampleJob:
    index: int  # position in the workload: seeds and first tokens are stored at this index
    prompt: PromptJob
    sample_index: int
    limit: int  # most tokens to generate
    forced_end: bool = False  # benchmark: reaching ``limit`` counts as end-of-sequence
    tokens: list[int] = field(default_factory=list)
    row: int = -1
    block_start: int = -1  # its block of generated keys in the arena (kv_cache.py)
    checked: int = 0  # tokens already scanned for stop sequences
    finish: str | None = None  # "eos", "length", "stop"
    num_tokens: int = 0


@dataclass
class FinishRule:
    eos_ids: frozenset[int]
    ignore_eos: bool
    decode: Decode
    decode_tokens: Callable[[Sequence[int]], str]
    check_every: int = 8  # tokens between stop-sequence scans of one sample

    def after_token(self, job: SampleJob) -> bool:
        """Called after each appended token; True when the sample must stop."""
        token = job.tokens[-1]
        if not self.ignore_eos and token in self.eos_ids:
            job.finish, job.num_tokens = "eos", len(job.tokens)
            return True
        if len(job.tokens) >= job.limit:
            job.finish = "eos" if job.forced_end else "length"
            job.num_tokens = len(job.tokens)
            return True
        stops = job.prompt.request.stop_sequences
        if stops and len(job.tokens) - job.checked >= self.check_every:
            lookback = max(map(len, stops)) + 8  # tokens: one per character, and some that decode to nothing
            start = job.checked - lookback
            window = self._text(job, job.tokens) if start <= 0 else self.decode_tokens(job.tokens[start:])
            job.checked = len(job.tokens)
            if any(stop in window for stop in stops) and _first_stop(self._text(job, job.tokens), stops) is not None:
                job.finish = "stop"
                return True
        return False

    def completion(self, job: SampleJob) -> Completion:
        """The final record: text cut before the first stop sequence of the whole decoded text."""
        tokens = job.tokens[:job.num_tokens] if job.finish != "stop" else job.tokens
        text_ids = tokens[:-1] if job.finish == "eos" and not job.forced_end else tokens
        text = self._text(job, text_ids)
        stops = job.prompt.request.stop_sequences
        cut = _first_stop(text, stops) if stops else None
        finish, num_tokens, raw = job.finish, job.num_tokens, text
        if cut is not None:
            text, finish = text[:cut], "stop"
            num_tokens = self._tokens_to_stop(job, text_ids, stops)
            raw = self._text(job, text_ids[:num_tokens])  # what a per-token stop check would have kept
        assert finish is not None  # only finished rows are made into completions
        return Completion(task_id=job.prompt.request.task_id, sample_index=job.sample_index, text=text,
                          finish_reason=finish, num_tokens=num_tokens, raw_text=raw)

    def _text(self, job: SampleJob, ids: Sequence[int]) -> str:
        return self.decode(job.prompt.request, job.prompt.ids, ids)

    def _tokens_to_stop(self, job: SampleJob, ids: list[int], stops: Sequence[str]) -> int:
        """Fewest leading tokens whose text contains a stop sequence: what a generator that checks every
        token would have produced."""
        lo, hi = 1, len(ids)
        while lo < hi:
            mid = (lo + hi) // 2
            if _first_stop(self._text(job, ids[:mid]), stops) is None:
                lo = mid + 1
            else:
                hi = mid
        return hi


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    found = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(found) if found else None


class RowTable:
    """Which sample occupies each decode row; free rows are handed out lowest first, so busy rows stay
    packed at the front and the smallest graph bucket covers them. The mapping is kept as jobs (``samples``)
    and as arrays of workload indices (``index``: row -> sample, -1 when idle; ``row_of``: sample -> its last
    row), which a step's read-back indexes all at once (:class:`TokenBook`)."""

    def __init__(self, rows: int, workload: int):
        self.samples: list[SampleJob | None] = [None] * rows
        self.index = np.full(rows, -1, dtype=np.int64)
        self.row_of = np.full(workload, -1, dtype=np.int64)
        self._free = list(range(rows))
        heapq.heapify(self._free)
        self.busy = 0

    def has_free(self) -> bool:
        return bool(self._free)

    def take(self, job: SampleJob) -> int:
        row = heapq.heappop(self._free)
        self.samples[row] = job
        self.index[row], self.row_of[job.index] = job.index, row
        job.row = row
        self.busy += 1
        return row

    def release(self, job: SampleJob) -> int:
        row = job.row
        self.samples[row] = None
        self.index[row] = -1
        heapq.heappush(self._free, row)
        self.busy -= 1
        return row

    def running(self) -> np.ndarray:
        """Workload indices of the samples in busy rows."""
        return self.index[self.index >= 0]

    def highest_busy(self) -> int:
        for row in range(len(self.samples) - 1, -1, -1):
            if self.samples[row] is not None:
                return row
        return -1

    def compact_order(self) -> list[int]:
        """Busy rows in order; after the device moves them to the front, renumber here the same way."""
        keep = [row for row, job in enumerate(self.samples) if job is not None]
        jobs = [job for job in self.samples if job is not None]
        self.samples = [None] * len(self.samples)
        self.index[:] = -1
        for new_row, job in enumerate(jobs):
            self.samples[new_row] = job
            self.index[new_row], self.row_of[job.index] = job.index, new_row
            job.row = new_row
        self._free = list(range(len(jobs), len(self.samples)))
        heapq.heapify(self._free)
        return keep


class TokenBook:
    """The running samples' generated tokens in one host array (a line per decode row), appended for a whole
    step at once. Python looks at a sample only when it may end: at its token limit, at an end-of-sequence
    id, or when a stop-sequence scan is due (:attr:`FinishRule.check_every`); the rest of a step is array
    arithmetic (at 512 rows a step read back one sample at a time cost ~1 ms of the host's time)."""

    def __init__(self, rows: RowTable, jobs: list[SampleJob], rule: FinishRule):
        self.rows = rows  # where each sample runs
        self.jobs = jobs  # by workload index (SampleJob.index)
        self.check_every = rule.check_every
        self.eos = np.array(sorted(rule.eos_ids) if not rule.ignore_eos else [], dtype=np.int64)
        capacity = max((job.limit for job in jobs), default=1)
        self.tokens = np.zeros((len(rows.samples), capacity), dtype=np.int64)
        self.length = np.zeros(len(rows.samples), dtype=np.int64)  # tokens generated by the row's sample
        self.checked = np.zeros(len(rows.samples), dtype=np.int64)  # of them, already scanned for stop sequences
        self.done = np.zeros(len(jobs), dtype=bool)
        self.limit = np.array([job.limit for job in jobs], dtype=np.int64)
        self.prompt_length = np.array([len(job.prompt.ids) for job in jobs], dtype=np.int64)
        # each sample's prompt, as the workload index of the prompt's first sample (prompt_length is indexed alike)
        self.prompt_of = np.array([job.prompt.first_sample for job in jobs], dtype=np.int64)
        self.has_stops = np.array([bool(job.prompt.request.stop_sequences) for job in jobs], dtype=bool)

    def start(self, row: int) -> None:
        self.length[row], self.checked[row] = 0, 0

    def finish(self, job: SampleJob) -> None:
        self.done[job.index] = True

    def moved(self, keep: list[int]) -> None:
        """Rows ``keep`` (old indices, in order) became rows 0..len(keep)-1 (:meth:`RowTable.compact_order`)."""
        n, old = len(keep), np.asarray(keep, dtype=np.int64)
        for column in (self.tokens, self.length, self.checked):
            column[:n] = column[old]
        self.length[n:], self.checked[n:] = 0, 0

    def append(self, samples: np.ndarray, tokens: np.ndarray) -> tuple[int, int, list[SampleJob]]:
        """One step's tokens: ``samples[i]`` (the workload index in row i when the step was launched, -1 for
        none) drew ``tokens[i]``. Samples that ended since are skipped. Returns the tokens appended, the keys
        and values the step had to read at least (each live row's generated ones, and each of their prompts'
        once: its samples share one stored copy) and the samples to look at, whose ``tokens`` list is brought up
        to date."""
        live = samples >= 0
        live[live] = ~self.done[samples[live]]
        index, drawn = samples[live], tokens[live]
        rows = self.rows.row_of[index]
        length = self.length[rows]
        self.tokens[rows, length] = drawn
        length += 1
        self.length[rows] = length
        look = (length >= self.limit[index]) | (self.has_stops[index]
                                                & (length - self.checked[rows] >= self.check_every))
        if self.eos.size:
            look |= np.isin(drawn, self.eos)
        flagged = []
        for row, sample in zip(rows[look].tolist(), index[look].tolist()):
            job = self.jobs[sample]
            job.tokens = self.tokens[row, :self.length[row]].tolist()
            flagged.append(job)
        prompts = np.unique(self.prompt_of[index])
        return len(index), int(length.sum() + self.prompt_length[prompts].sum()), flagged

    def scanned(self, job: SampleJob) -> None:
        """``job`` goes on: remember how far its stop-sequence scan got."""
        self.checked[job.row] = job.checked


def waiting_queue(prompts: list[PromptJob]) -> deque[SampleJob]:
    return deque(job for prompt in prompts for job in prompt.samples)
