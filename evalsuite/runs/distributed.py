"""Data parallelism under the launchers users already have (torchrun, accelerate launch, SLURM + torchrun).

Each rank generates a deterministic shard of the problems with its own model replica, writing its own
completions file, and executes its shard in its own sandbox pool; rank 0 gathers the verdicts, scores and
writes the records. Because each sample's randomness depends only on (seed, task_id, sample_index), the
results equal a single-process run's, whatever the number of ranks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def shard(self, items: Sequence[T]) -> list[T]:
        """Round-robin split: balanced when problem lengths vary smoothly along the dataset."""
        return list(items[self.rank::self.world_size])

    def completions_name(self) -> str:
        return f"completions.rank{self.rank}.jsonl" if self.enabled else "completions.jsonl"

    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's ``obj`` on rank 0 (in rank order); None elsewhere."""
        if not self.enabled:
            return [obj]
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        dist.gather_object(obj, out, dst=0)
        return out


def context_from_env() -> DistContext:
    """Join the process group that torchrun / accelerate launch set up through the environment."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistContext()
    import torch
    import torch.distributed as dist

    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        use_nccl = torch.cuda.is_available() and torch.cuda.device_count() > local_rank
        if use_nccl:
            torch.cuda.set_device(local_rank)
        # gloo also carries the object collectives (gather of verdicts) on CPU-only machines.
        dist.init_process_group(backend="nccl" if use_nccl else "gloo")
    return DistContext(rank=rank, world_size=world_size, local_rank=local_rank)


def shutdown(ctx: DistContext) -> None:
    if ctx.enabled:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
