"""Per-sample seeds, torch-free: the openai backend seeds its requests with them on installs without torch.

Each sample's randomness depends only on (seed, task_id, sample_index), so a resumed run, a run split
over ranks and a run on another backend draw the same sample's noise from the same seed.
"""

from __future__ import annotations

import hashlib

_MASK62 = (1 << 62) - 1


def row_seed(seed: int, task_id: str, sample_index: int) -> int:
    """A stable 62-bit seed for one sample (independent of Python's hash randomisation)."""
    digest = hashlib.blake2b(f"{seed}\x1f{task_id}\x1f{sample_index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK62
