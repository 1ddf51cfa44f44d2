"""splitmix64 as a Triton device function: the hash behind the counter-based noise, shared by the noise kernel
(:mod:`.sampling`) and the fused top-p kernel (:mod:`.top_p_kernel`), which must draw the same bits. A module of
its own so that neither kernel imports the other. Only defined where Triton is installed."""

from __future__ import annotations

from typing import Any

try:
    import triton
except ImportError:  # CPU-only installs
    splitmix64_tl: Any = None  # the Triton kernel below where Triton is installed
else:
    @triton.jit
    def splitmix64_tl(x):
        x = x + 0x9E3779B97F4A7C15
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB
        return x ^ (x >> 31)
