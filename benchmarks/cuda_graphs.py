"""What the GPU micro-benchmarks share: a CUDA graph of a function (after eager warm-up runs), its replays timed."""

from __future__ import annotations

import torch


def graph_of(fn, warmups: int = 2) -> torch.cuda.CUDAGraph:
    """A graph holding one call of ``fn``. The warm-up calls run first on a side stream (kernel compilation and
    library handles must not happen during capture), as torch's graph recipe does."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph


def replay_times_ms(graph: torch.cuda.CUDAGraph, reps: int, before=None) -> list[float]:
    """Milliseconds of each of ``reps`` replays of ``graph``, timed with CUDA events (``before()`` runs ahead of
    each replay, untimed)."""
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times
