"""Ending each row of a batched ``model.generate`` at its first stop sequence or EOS, and saying why.

A row stops being generated as soon as its continuation contains one of its stop sequences (checked
every step on the newly decoded tail, so the cost does not grow with the completion's length); the
step at which it ended is recorded, so the completion is cut exactly there and no later token (pads
of a finished row, which may equal real tokens) ever leaks into it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from transformers import LogitsProcessor, StoppingCriteria

from evalsuite.generation.hf.tokenizer_fixes import PromptCodec

TAIL_MARGIN_TOKENS = 8  # beyond one token per stop character: room for tokens that decode to nothing


class StopTracker(StoppingCriteria):
    """Per-row stop detection; ``ended_at[row]`` is the number of generated tokens kept for it."""

    def __init__(self, codec: PromptCodec, prompt_ids: Sequence[Sequence[int]],
                 stop_sequences: Sequence[Sequence[str]], prompt_length: int,
                 on_tokens: Callable[[int], None] | None = None,
                 on_row_end: Callable[[int, list[int]], None] | None = None, limits: Sequence[int] | None = None):
        """``on_tokens(n)``: told after each step how many rows were still decoding (progress in tokens);
        ``on_row_end(row, generated_ids)``: told the moment a row ends, so it can be saved before its batch ends;
        ``limits``: each row's own token budget where rows differ (``--max-length`` counts the prompt)."""
        self.codec = codec
        self.on_tokens = on_tokens
        self.on_row_end = on_row_end
        self.cancelled = False  # set from another thread: every row stops at the next step (a stopped job)
        self.prompt_ids = [list(ids) for ids in prompt_ids]
        self.stops = [tuple(s for s in stops if s) for stops in stop_sequences]
        self.prompt_length = prompt_length
        longest = max((len(s) for stops in self.stops for s in stops), default=0)
        self.window = longest + TAIL_MARGIN_TOKENS
        self.ended_at: list[int | None] = [None] * len(self.prompt_ids)
        self.reason: list[str | None] = [None] * len(self.prompt_ids)
        self.limits = list(limits) if limits is not None else None

    def cancel(self) -> None:
        self.cancelled = True

    def tail_text(self, row: int, generated: list[int], total: int) -> str:
        if total <= self.window:  # the whole continuation, as the completion will read
            return self.codec.decode_continuation(self.prompt_ids[row], generated)
        return self.codec.decode(generated)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        total = input_ids.shape[1] - self.prompt_length
        if self.on_tokens is not None:
            self.on_tokens(sum(ended is None for ended in self.ended_at))
        if total > 0:
            tail = input_ids[:, -min(total, self.window):].tolist()
            for row, ids in enumerate(tail):
                if self.ended_at[row] is not None:
                    continue
                if ids[-1] in self.codec.eos_ids:
                    self.ended_at[row], self.reason[row] = total, "eos"
                elif self.stops[row]:
                    text = self.tail_text(row, ids, total)
                    if any(stop in text for stop in self.stops[row]):
                        self.ended_at[row], self.reason[row] = total, "stop"
                if self.ended_at[row] is None and self.limits is not None and total >= self.limits[row]:
                    self.ended_at[row], self.reason[row] = total, "length"
                if self.ended_at[row] is not None and self.on_row_end is not None:
                    self.on_row_end(row, input_ids[row, self.prompt_length:].tolist())
        if self.cancelled:
            return torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        done = [ended is not None for ended in self.ended_at]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class MaskIdsFrom(LogitsProcessor):
    """Never pick ids past the tokenizer's vocabulary (padding rows of an enlarged embedding)."""

    def __init__(self, limit: int):
        self.limit = limit

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        scores[:, self.limit:] = float("-inf")
        return scores
