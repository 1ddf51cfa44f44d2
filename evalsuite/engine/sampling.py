"""Counter-based sampling: each sample's randomness is a pure function of (seed, task_id, sample_index, step).

Why: a run that resumes after a crash, or is split across ranks, must produce exactly the completions a
single uninterrupted run makes. A global RNG ties every draw to batch composition and order; here each row
draws from its own hash-derived noise (Gumbel-max trick: ``argmax(logits/T + Gumbel noise)`` samples from
``softmax(logits/T)``), vectorised on the device, with no per-row loop and no host sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from evalsuite.engine.host_values import per_row_steps
from evalsuite.records import SamplingParams
from evalsuite.seeding import row_seed

# splitmix64 constants, as signed int64 (torch has no uint64 arithmetic); multiplication wraps mod 2^64.
_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15
_MIX1 = -4658895280553007687  # 0xBF58476D1CE4E5B9
_MIX2 = -7723592293110705685  # 0x94D049BB133111EB


def row_seeds(seed: int, task_id: str, sample_indices: Sequence[int], device=None) -> torch.Tensor:
    return torch.tensor([row_seed(seed, task_id, i) for i in sample_indices], dtype=torch.int64, device=device)


def _shr(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift on int64 (torch's >> is arithmetic)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def _splitmix64(x: torch.Tensor) -> torch.Tensor:
    x = x + _GOLDEN
    x = (x ^ _shr(x, 30)) * _MIX1
    x = (x ^ _shr(x, 27)) * _MIX2
    return x ^ _shr(x, 31)


def uniform_noise(seeds: torch.Tensor, step: int | torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Uniform (0, 1) float32 noise of shape [rows, vocab], a pure function of (seed, step, token id)."""
    if seeds.is_cuda and _noise_kernel is not None:  # same bits, one pass instead of ~16 int64 passes
        return _uniform_noise_triton(seeds, step, vocab_size)
    token_ids = torch.arange(vocab_size, device=seeds.device, dtype=torch.int64)
    step_t = torch.as_tensor(step, device=seeds.device, dtype=torch.int64).reshape(-1, 1)
    x = _splitmix64(seeds.reshape(-1, 1) ^ _splitmix64(step_t))
    x = _splitmix64(x + token_ids.reshape(1, -1) * _GOLDEN)
    bits24 = _shr(x, 40).to(torch.float32)
    return (bits24 + 0.5) / float(1 << 24)


# The same noise as the torch code above, bit for bit (integer arithmetic, then an exact int -> float
# conversion and a power-of-two scale), in one kernel: on a GPU the torch version's ~16 passes over an
# int64 [rows, vocab] tensor cost more than a decode step of a 6B model at large batch.
try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs
    _noise_kernel: Any = None  # the Triton kernel below where Triton is installed
else:
    from evalsuite.engine.splitmix_kernel import splitmix64_tl as _splitmix64_tl

    @triton.jit
    def _noise_kernel(SEEDS, STEPS, OUT, vocab, stride_row, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        seed = tl.load(SEEDS + row).to(tl.uint64, bitcast=True)
        step = tl.load(STEPS + row).to(tl.uint64, bitcast=True)
        x = _splitmix64_tl(seed ^ _splitmix64_tl(step))
        x = _splitmix64_tl(x + offs.to(tl.uint64) * 0x9E3779B97F4A7C15)
        bits24 = (x >> 40).to(tl.float32)
        noise = (bits24 + 0.5) * (1.0 / 16777216.0)
        tl.store(OUT + row.to(tl.int64) * stride_row + offs, noise, mask=offs < vocab)


def _uniform_noise_triton(seeds: torch.Tensor, step: int | torch.Tensor, vocab_size: int) -> torch.Tensor:
    rows = seeds.numel()
    steps = per_row_steps(step, rows, seeds.device)
    out = torch.empty(rows, vocab_size, dtype=torch.float32, device=seeds.device)
    block = 1024
    _noise_kernel[(rows, triton.cdiv(vocab_size, block))](seeds.reshape(-1).contiguous(), steps, out, vocab_size,
                                                          out.stride(0), BLOCK=block)
    return out


def filter_logits(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Temperature, top-k and top-p (nucleus) filtering, as in transformers' warpers."""
    logits = logits.float() / params.temperature
    vocab = logits.shape[-1]
    if params.top_k and params.top_k < vocab:
        kth = torch.topk(logits, params.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if params.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        sorted_probs = sorted_logits.softmax(dim=-1)
        cumulative = sorted_probs.cumsum(dim=-1)
        # drop a token when the mass before it already reaches top_p (always keep the best one)
        drop_sorted = (cumulative - sorted_probs) >= params.top_p
        drop_sorted[..., 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def choose_tokens(logits: torch.Tensor, seeds: torch.Tensor, step: int | torch.Tensor,
                  params: SamplingParams) -> torch.Tensor:
    """Next token per row: argmax when greedy, else a seeded Gumbel-max draw from the filtered distribution.

    ``step`` is the index of the token being generated (0 for the first new token), a scalar or one per row.
    """
    if params.greedy:
        return torch.argmax(logits, dim=-1)
    if logits.is_cuda:  # one kernel instead of a sort and a dozen passes (same tokens: top_p_kernel.py)
        from evalsuite.engine.top_p_kernel import fused_top_p_usable, sample_top_p

        if fused_top_p_usable(logits, params.top_k if params.top_k and params.top_k < logits.shape[-1] else 0):
            return sample_top_p(logits, seeds, step, params.temperature, params.top_p)
    filtered = filter_logits(logits, params)
    noise = uniform_noise(seeds, step, logits.shape[-1])
    gumbel = -torch.log(-torch.log(noise))
    return torch.argmax(filtered + gumbel, dim=-1)


class SeededSampler:
    """A transformers ``LogitsProcessor``: picks each row's token with :func:`choose_tokens` and masks the
    rest, so ``model.generate(do_sample=False, logits_processor=[sampler])`` samples reproducibly."""

    def __init__(self, seeds: torch.Tensor, params: SamplingParams, prompt_length: int):
        self.seeds = seeds
        self.params = params
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        step = input_ids.shape[1] - self.prompt_length
        seeds = self.seeds.to(scores.device)
        chosen = choose_tokens(scores, seeds, step, self.params)
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(-1, chosen.unsqueeze(-1), 0.0)
        return out
