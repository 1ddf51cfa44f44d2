"""Data parallelism under the launchers users already have (torchrun, accelerate launch, SLURM + torchrun).

Each rank generates a deterministic shard of the problems with its own model replica, writing its own
completions file, and executes its shard in its own sandbox pool; rank 0 gathers the verdicts, scores and
writes the records. Because each sample's randomness depends only on (seed, task_id, sample_index), the
results equal a single-process run's, whatever the number of ranks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from evalsuite.errors import EvalsuiteError

T = TypeVar("T")


class RankLost(EvalsuiteError):
    """Another rank stopped (killed, crashed, its machine gone) while this one needed it: said in one line, at
    once, instead of waiting on a collective that can never complete."""

    exit_code = 1

    def __init__(self, rank: int, during: str, cause: BaseException):
        super().__init__(f"rank {rank}: another rank stopped {during} ({_first_sentence(cause)}); the completions "
                         "saved so far are kept: rerun the same command to resume")


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    gpu: int | None = None  # the CUDA index this rank decodes on (see rank_gpu); None: no GPU
    cpus: int = 0  # how many CPUs this rank runs on, its sandbox pool's size (see rank_cpus); 0: one process
    # a patient_group() the collectives after a model's shares use, where the ranks may arrive far apart
    patient: Any = field(default=None, compare=False, repr=False)

    @property
    def device(self) -> str:
        """What the rank passes as ``--device``: its own GPU, which the planner then sees alone."""
        return f"cuda:{self.gpu}" if self.gpu is not None else "cpu"

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

    def gather(self, obj: Any, group: Any = None) -> list[Any] | None:
        """Every rank's ``obj`` on rank 0 (in rank order); None elsewhere. ``group``: a :meth:`patient_group`."""
        if not self.enabled:
            return [obj]
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        try:
            dist.gather_object(obj, out, dst=0, group=group if group is not None else self.patient)
        except RuntimeError as exc:  # DistBackendError: a peer's connection closed, or the collective timed out
            raise RankLost(self.rank, "before the ranks gathered their results", exc) from None
        return out

    def patient_group(self) -> Any:
        """A gloo group of every rank whose collectives wait as long as the slowest rank takes (a week): under
        ``--spread models`` a rank that has run its models waits there for the others' (hours), where the default
        group gives up after minutes. Every rank must call this at the same point (it is a collective)."""
        from datetime import timedelta

        import torch.distributed as dist

        return dist.new_group(backend="gloo", timeout=timedelta(days=7))

    def everyone(self, obj: T) -> list[T]:
        """Every rank's ``obj`` on every rank (in rank order): what each rank found, for a choice all make alike."""
        if not self.enabled:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        try:
            dist.all_gather_object(out, obj, group=self.patient)
        except RuntimeError as exc:
            raise RankLost(self.rank, "while the ranks compared their models", exc) from None
        return out

    def agree(self, obj: T) -> T:
        """Rank 0's ``obj`` on every rank: one invocation id for the rows of all ranks, so a later resume can
        count what this invocation made."""
        if not self.enabled:
            return obj
        import torch.distributed as dist

        box = [obj]
        try:
            dist.broadcast_object_list(box, src=0)
        except RuntimeError as exc:
            raise RankLost(self.rank, "before generation started", exc) from None
        return box[0]


def context_from_env(environ: Mapping[str, str] = os.environ) -> DistContext:
    """Join the process group that torchrun / accelerate launch set up through the environment."""
    world_size = int(environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        check_one_process_launch(environ)
        return DistContext()
    import torch
    import torch.distributed as dist

    rank, local_rank = int(environ["RANK"]), int(environ.get("LOCAL_RANK", "0"))
    local_ranks = int(environ["LOCAL_WORLD_SIZE"]) if environ.get("LOCAL_WORLD_SIZE") else None
    gpu = rank_gpu(local_rank, torch.cuda.device_count() if torch.cuda.is_available() else 0, local_ranks)
    share = rank_cpus(local_rank, local_ranks, sorted(os.sched_getaffinity(0)), os.cpu_count() or 1) \
        if hasattr(os, "sched_getaffinity") else None
    if share is not None:
        os.sched_setaffinity(0, share)
    if not dist.is_initialized():
        if gpu is not None:
            torch.cuda.set_device(gpu)
        # gloo also carries the object collectives (gather of verdicts) on CPU-only machines.
        dist.init_process_group(backend="nccl" if gpu is not None else "gloo")
    runs_on = share if share is not None else (os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else ())
    return DistContext(rank=rank, world_size=world_size, local_rank=local_rank, gpu=gpu,
                       cpus=len(runs_on) or os.cpu_count() or 1)


def rank_cpus(local_rank: int, local_ranks: int | None, allowed: Sequence[int], online: int) -> list[int] | None:
    """This rank's own block of the node's CPUs, or None to leave its affinity as the launcher set it.

    Why: every rank sizes its sandbox pool by its CPUs and pins a worker to each. Four ranks on a 64-core
    host started 256 pinned workers on 64 cores, and a rank that finished early executed its samples on
    every core while the others were still generating: their decode steps waited for a CPU (4 ranks: 12.1 ms
    a step against 11.5 ms alone). Split only a mask nobody narrowed (all ``online`` CPUs): a launcher that
    binds ranks itself (``srun --cpu-bind``) or a container's own set is kept as it is."""
    ranks = local_ranks or 1
    if ranks <= 1 or len(allowed) != online or len(allowed) < ranks:
        return None
    size = len(allowed) // ranks  # contiguous blocks: a GPU's neighbouring cores are usually one NUMA node
    return list(allowed[local_rank * size:(local_rank + 1) * size])


def rank_gpu(local_rank: int, visible: int, local_ranks: int | None = None) -> int | None:
    """The GPU of the rank with ``local_rank`` among ``visible`` GPUs, where ``local_ranks`` ranks share the node
    (torchrun's LOCAL_WORLD_SIZE; None where the launcher does not say): its own index where the node's GPUs
    are all visible (torchrun), the one GPU where a launcher shows each rank its own alone (``srun
    --gpus-per-task=1``, a CUDA_VISIBLE_DEVICES per rank); None without GPUs. More ranks than GPUs would share
    cards (NCCL refuses two ranks on one GPU): refused in one line."""
    if visible == 0:
        return None
    if (local_ranks or 0) > visible or (local_rank >= visible and visible > 1):
        ranks = local_ranks if local_ranks else local_rank + 1
        raise EvalsuiteError(f"{ranks} ranks on this node see {visible} GPU(s): start at most {visible} per node "
                             "(--nproc-per-node), or show each rank its own GPU (CUDA_VISIBLE_DEVICES)")
    return min(local_rank, visible - 1)  # one visible GPU: the rank's own, whatever its LOCAL_RANK


def check_one_process_launch(environ: Mapping[str, str]) -> None:
    """Refuse a launcher that was asked for several processes but started this one alone. ``accelerate launch
    --num_processes 2`` on a machine without GPUs (and no ``accelerate config``) runs its one-process launcher: it
    sets its ``ACCELERATE_*`` variables and, because more than one process was asked for, ``MASTER_PORT``, but no
    ``WORLD_SIZE``; a run would silently be one process."""
    if "WORLD_SIZE" in environ or "MASTER_PORT" not in environ:
        return
    if any(name.startswith("ACCELERATE_") for name in environ):
        raise EvalsuiteError("accelerate launch started one process where several were asked for (without a GPU "
                             "or an accelerate config it runs them as one); add --multi_gpu (on CPU the ranks talk "
                             "over gloo), or use torchrun --nproc-per-node N, or drop --num_processes")


def _first_sentence(exc: BaseException) -> str:
    """A collective's error in a few words: gloo's starts with its source location and ends with advice."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if text.startswith("[") and "] " in text:
        text = text.split("] ", 1)[1]
    return text.split(". ", 1)[0].rstrip(".")[:200]


def shutdown(ctx: DistContext) -> None:
    if ctx.enabled:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
