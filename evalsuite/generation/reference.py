"""The ``reference`` model: answers every problem with its canonical solution.

It lets the harness check itself end to end (pass@1 must be 1.000) on a machine with no GPU and no
network, and is what ``evalsuite run`` evaluates when no model is named.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import Generator
from evalsuite.records import Completion, GenerationRequest, SamplingParams


class ReferenceGenerator(Generator):
    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> Iterator[Completion]:
        for request in requests:
            if request.canonical_solution is None:
                raise EvalsuiteError(f"the reference model needs canonical solutions; {request.task_id} has none")
            for index in request.sample_indices:
                yield Completion(task_id=request.task_id, sample_index=index, text=request.canonical_solution,
                                 finish_reason="stop", num_tokens=0)

    def describe(self) -> dict[str, Any]:
        return {"backend": "reference", "model": "reference",
                "note": "answers with each problem's canonical solution"}
