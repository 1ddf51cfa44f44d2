"""Generation backends behind one contract (:class:`~evalsuite.generation.base.Generator`).

:func:`load_generator` is the only entry point the runner needs; backends import torch or HTTP code
lazily, so ``evalsuite --help`` stays fast.
"""

from __future__ import annotations

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import Generator
from evalsuite.generation.options import BACKENDS, GenerationOptions
from evalsuite.models.registry import ModelSpec


def load_generator(model: ModelSpec | str, options: GenerationOptions) -> Generator:
    """Load ``model`` with the backend ``options.backend`` names ("auto": reference for "reference", openai
    where ``--base-url`` is given, else hf).

    ``model`` is the :class:`ModelSpec` the run resolved once (a bare name is resolved here, for callers
    outside a run). An unknown name fails with one clear line (not an alias, not a local directory, not a hub id).
    """
    backend = options.backend
    if backend not in BACKENDS:
        raise EvalsuiteError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    name = model.name if isinstance(model, ModelSpec) else model
    if backend == "reference" or (backend == "auto" and name == "reference"):
        from evalsuite.generation.reference import ReferenceGenerator

        return ReferenceGenerator()
    if backend == "openai" or (backend == "auto" and options.openai.base_url):
        from evalsuite.generation.openai_backend import OpenAIGenerator

        return OpenAIGenerator.connect(name, options)
    if isinstance(model, ModelSpec):
        spec = model
    else:
        from evalsuite.models.registry import resolve_model

        spec = resolve_model(model, revision=options.loading.revision)  # the clear error, before torch is imported
    try:
        from evalsuite.generation.hf.generator import HFGenerator
    except ImportError as exc:
        raise EvalsuiteError(f"the hf backend needs torch and transformers: pip install 'evalsuite[hf]' ({exc})") \
            from exc
    return HFGenerator.load(spec, options)


__all__ = ["load_generator", "GenerationOptions", "Generator", "BACKENDS"]
