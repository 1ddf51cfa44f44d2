"""The generation backends, by name: ``hf``, ``openai`` and ``reference`` here, more from installed packages
(entry point group ``evalsuite.backends``; see :mod:`evalsuite.registry`).

A backend is a callable ``(model, options) -> Generator``: ``model`` is the run's resolved
:class:`~evalsuite.models.registry.ModelSpec` (or a bare name from a caller outside a run), ``options`` the
:class:`~evalsuite.generation.options.GenerationOptions`. Each built-in imports its heavy code (torch, HTTP)
only when it is called, so ``evalsuite --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalsuite.errors import EvalsuiteError
from evalsuite.registry import Registry
from evalsuite.signals import stops_held

if TYPE_CHECKING:
    from evalsuite.generation.base import Generator

BackendLoader = Callable[[Any, Any], "Generator"]
BACKENDS: Registry[BackendLoader] = Registry("backends", "backend")
AUTO = "auto"  # not a backend: reference for "reference", openai where --base-url is given, else hf


@BACKENDS.register("reference")
def reference_backend(model: Any, options: Any) -> Generator:
    from evalsuite.generation.reference import ReferenceGenerator

    return ReferenceGenerator()


@BACKENDS.register("openai")
def openai_backend(model: Any, options: Any) -> Generator:
    from evalsuite.generation.openai_backend import OpenAIGenerator

    return OpenAIGenerator.connect(getattr(model, "name", model), options)


@BACKENDS.register("hf")
def hf_backend(model: Any, options: Any) -> Generator:
    from evalsuite.models.registry import ModelSpec, resolve_model

    # a bare name is resolved before torch is imported: an unknown one fails with its own clear line
    spec = model if isinstance(model, ModelSpec) else resolve_model(model, revision=options.loading.revision)
    try:
        with stops_held():  # a stop inside torch's import left it half done (see evalsuite.signals)
            from evalsuite.generation.hf.generator import HFGenerator
    except ImportError as exc:
        raise EvalsuiteError(f"the hf backend needs torch and transformers: pip install 'evalsuite[hf]' ({exc})") \
            from exc
    return HFGenerator.load(spec, options)


def backend_for(name: str, options: Any) -> str:
    """The backend that runs ``name``: ``options.backend``, or under ``auto`` the one its rule picks."""
    if options.backend != AUTO:
        return options.backend
    if name == "reference":
        return "reference"
    return "openai" if options.openai.base_url else "hf"

