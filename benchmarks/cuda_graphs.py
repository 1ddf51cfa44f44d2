"""One helper the GPU micro-benchmarks share: a CUDA graph of a function, after eager warm-up runs."""

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
