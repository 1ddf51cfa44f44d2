"""Generation backends behind one contract (:class:`~evalsuite.generation.base.Generator`).

:func:`load_generator` is the only entry point the runner needs; backends import torch or HTTP code
lazily, so ``evalsuite --help`` stays fast.
"""

from __future__ import annotations

from evalsuite.generation.backends import BACKENDS, backend_for
from evalsuite.generation.base import Generator
from evalsuite.generation.options import GenerationOptions
from evalsuite.models.registry import ModelSpec


def load_generator(model: ModelSpec | str, options: GenerationOptions) -> Generator:
    """Load ``model`` with the backend ``options.backend`` names (see :mod:`evalsuite.generation.backends`;
    "auto": reference for "reference", openai where ``--base-url`` is given, else hf).

    ``model`` is the :class:`ModelSpec` the run resolved once (a bare name is resolved here, for callers
    outside a run). An unknown name fails with one clear line (not an alias, not a local directory, not a hub id).
    """
    name = model.name if isinstance(model, ModelSpec) else model
    return BACKENDS.get(backend_for(name, options))(model, options)


def check_available(model: ModelSpec, options: GenerationOptions) -> None:
    """Fail in one line where ``model`` cannot be had at all: with the hf backend, a hub id or alias that is neither
    in the Hugging Face cache nor reachable (a typo lands here). A command checks every model with this before it
    loads the first, so a bad third name does not wait for two models to run."""
    if backend_for(model.name, options) != "hf":
        return
    from evalsuite.generation.hf.loading import check_hub_reachable

    check_hub_reachable(model)


def check_prompt_style(model: ModelSpec, options: GenerationOptions, style: str) -> None:
    """``--prompt-style instruct`` on an hf model whose tokenizer has no chat template fails in one line before
    any model's weights load (its config and tokenizer only: what ``evalsuite models NAME`` reads), not after the
    model of a command it names has loaded. Other styles never fail here; a server chats without a template."""
    if style != "instruct" or backend_for(model.name, options) != "hf":
        return
    from evalsuite.errors import EvalsuiteError
    from evalsuite.generation.hf.inspection import chat_template_of

    if not chat_template_of(model, options.loading):
        raise EvalsuiteError(f"{model.name}: --prompt-style instruct needs a chat template, and this model's "
                             "tokenizer has none; use --prompt-style base")


__all__ = ["load_generator", "check_available", "check_prompt_style", "GenerationOptions", "Generator", "BACKENDS"]
