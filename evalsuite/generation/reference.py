"""The ``reference`` model: answers every problem with its canonical solution.

It lets the harness check itself end to end (pass@1 must be 1.000) on a machine with no GPU and no
network, and is what ``evalsuite run`` evaluates when no model is named. Asked in the instruct style, it
answers like a chat model: prose, the whole program in a fenced block, then a usage example in another,
so the extraction path is checked end to end too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import Generator
from evalsuite.records import Completion, GenerationRequest, SamplingParams


def canonical_solutions_sha256(solutions: Sequence[str | None]) -> str:
    """The digest of the answers the reference model gives: a spec's corrected ``solution_field`` is another run,
    never the earlier answers resumed (red-team round 20)."""
    return hashlib.sha256(json.dumps(list(solutions), ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


class ReferenceGenerator(Generator):
    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> Iterator[Completion]:
        for request in requests:
            if request.canonical_solution is None:
                raise EvalsuiteError(f"the reference model needs canonical solutions; {request.task_id} has none")
            text = request.canonical_solution
            if request.prompt_style == "instruct":
                text = (f"Here is a solution:\n```python\n{request.prompt}{request.canonical_solution}\n```\n"
                        "Example use:\n```python\nprint('example')\n```\n")
            for index in request.sample_indices:
                yield Completion(task_id=request.task_id, sample_index=index, text=text,
                                 finish_reason="stop", num_tokens=0)

    def answers_identity(self, canonical_solutions: Sequence[str | None]) -> dict[str, Any]:
        return {"canonical_solutions_sha256": canonical_solutions_sha256(canonical_solutions)}

    def decide_prompt_style(self, requested: str):
        from evalsuite.protocol.prompting import decide_style

        return decide_style(requested, None, can_chat=True)

    def describe(self) -> dict[str, Any]:
        return {"backend": "reference", "model": "reference",
                "note": "answers with each problem's canonical solution"}
