"""Reading a checkpoint's weights through transformers, refusing one that lacks weights its architecture has.

transformers fills a weight the checkpoint does not hold with fresh random numbers and says so only in a log
table: a checkpoint cut short, or saved from a wrapper under other names (DDP's ``module.`` prefix), loaded,
generated and was scored like the model it names, and two runs of it gave different completions under one run
id (the twenty-third session's red-team round). Every loader (the plain load and each planner strategy) goes
through :func:`load_causal_lm`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from evalsuite.errors import EvalsuiteError

SHOWN = 3  # missing weights named in the error


def load_causal_lm(location: str, **kwargs: Any) -> Any:
    """``AutoModelForCausalLM.from_pretrained(location, **kwargs)``, refused where weights were missing."""
    from transformers import AutoModelForCausalLM

    loaded: Any = AutoModelForCausalLM.from_pretrained(location, output_loading_info=True, **kwargs)
    model, info = loaded
    refuse_missing_weights(location, info)
    return model


def refuse_missing_weights(location: str, info: Mapping[str, Collection[str]]) -> None:
    """One line naming what the checkpoint lacks (``from_pretrained``'s ``output_loading_info``); extra weights the
    architecture does not use are transformers' business (it ignores them), missing ones would be random."""
    missing = sorted(info.get("missing_keys") or ())
    if not missing:
        return
    unexpected = sorted(info.get("unexpected_keys") or ())
    prefixes = {key.split(".", 1)[0] for key in unexpected if "." in key}
    hint = ""
    if len(prefixes) == 1 and len(unexpected) >= len(missing) // 2:
        hint = (f"; it holds {len(unexpected)} weights under the prefix {next(iter(prefixes)) + '.'!r} instead "
                "(saved from a wrapper? strip the prefix)")
    named = ", ".join(missing[:SHOWN]) + (f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else "")
    raise EvalsuiteError(f"cannot load model {location}: its checkpoint lacks {len(missing)} of the weights its "
                         f"architecture needs ({named}); transformers would make them random and every score "
                         f"would be noise{hint}")


__all__ = ["load_causal_lm", "refuse_missing_weights"]
