"""Fast sampling engine for the ``hf`` backend (prompt KV shared by its samples, continuous batching,
CUDA-graph decode steps). :class:`Engine.supports` says where it applies; elsewhere plain generate runs."""

from evalsuite.engine.engine import Engine, EngineOptions

__all__ = ["Engine", "EngineOptions"]
