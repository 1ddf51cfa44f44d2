"""Host values onto the device without the host waiting for it.

A copy from pageable host memory, or a host scalar written into device rows, waits until every kernel already
queued on the stream has run: in the decode loop that is the one or two steps in flight, so the host cannot
queue the next one meanwhile (benchmarks/sync_probe.py lists such waits). A filled tensor or a copy from
pinned memory is queued behind them instead.
"""

from __future__ import annotations

import torch


def to_device(values: list[int], device: torch.device) -> torch.Tensor:
    """int64 ``values`` on ``device``, through pinned memory on CUDA."""
    host = torch.tensor(values, dtype=torch.long)
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


def per_row_steps(step: int | torch.Tensor, rows: int, device: torch.device) -> torch.Tensor:
    """``step`` (a scalar or one per row) as one int64 per row on ``device``; a host integer is filled in on
    the device, not copied there."""
    if isinstance(step, int):
        return torch.full((rows,), step, device=device, dtype=torch.int64)
    return torch.as_tensor(step, device=device, dtype=torch.int64).reshape(-1).expand(rows).contiguous()
