"""Generation backends behind one contract (:class:`~evalsuite.generation.base.Generator`).

:func:`load_generator` is the only entry point the runner needs; backends import torch or HTTP code
lazily, so ``evalsuite --help`` stays fast.
"""

from __future__ import annotations

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import GenerationOptions, Generator

BACKENDS = ("auto", "hf", "openai", "reference")


def load_generator(model: str, options: GenerationOptions) -> Generator:
    """Load ``model`` with the backend ``options.backend`` names ("auto": reference for "reference", openai
    where ``--base-url`` is given, else hf).

    An unknown name fails here with one clear line (not an alias, not a local directory, not a hub id).
    """
    backend = options.backend
    if backend not in BACKENDS:
        raise EvalsuiteError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "reference" or (backend == "auto" and model == "reference"):
        from evalsuite.generation.reference import ReferenceGenerator

        return ReferenceGenerator()
    if backend == "openai" or (backend == "auto" and options.base_url):
        from evalsuite.generation.openai_backend import OpenAIGenerator

        return OpenAIGenerator.connect(model, options)
    from evalsuite.models.registry import resolve_model

    spec = resolve_model(model, revision=options.revision)  # raises the clear error before torch is imported
    try:
        from evalsuite.generation.hf.generator import HFGenerator
    except ImportError as exc:
        raise EvalsuiteError(f"the hf backend needs torch and transformers: pip install 'evalsuite[hf]' ({exc})") \
            from exc
    return HFGenerator.load(spec, options)


__all__ = ["load_generator", "GenerationOptions", "Generator", "BACKENDS"]
