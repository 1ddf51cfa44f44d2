"""What one ``evalsuite run`` invocation asks for (:class:`RunConfig`), and the checks on it that need no model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.execution.executor import ExecutionOptions
from evalsuite.execution.timeouts import TimeoutPolicy
from evalsuite.generation.base import GenerationOptions
from evalsuite.protocol.prompting import PromptProtocol
from evalsuite.records import SamplingParams
from evalsuite.tasks.task import Task


@dataclass(frozen=True)
class RunConfig:
    models: Sequence[str]
    tasks: Sequence[Task]
    sampling: SamplingParams
    ks: Sequence[int]
    limit: int | None = None
    output_dir: Path = Path("runs")
    generation: GenerationOptions = field(default_factory=GenerationOptions)
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)
    show_progress: bool = True
    argv: Sequence[str] = ()
    # Under torchrun: "problems" shards every model's problems over the ranks; "models" gives each rank whole
    # models (models[rank::world_size]), for several models that each fit one GPU.
    spread: str = "problems"
    # Each sample's wall-clock limit: calibrated per problem on this machine (default) or fixed (--timeout).
    timeouts: TimeoutPolicy = field(default_factory=TimeoutPolicy)
    prompt: PromptProtocol = field(default_factory=PromptProtocol)
    # display names (--name) by model as given in ``models``; a local path defaults to its folder's name
    names: Mapping[str, str] = field(default_factory=dict)
    leaderboard_dir: Path | None = None  # where the run pages link back to (None: no link)



def validate_config(config: RunConfig) -> None:
    too_big = [k for k in config.ks if k > config.sampling.n]
    if too_big:
        raise EvalsuiteError(f"pass@{max(too_big)} needs at least {max(too_big)} samples per problem, "
                             f"but --n is {config.sampling.n}: raise --n or lower --k")
    if config.sampling.greedy and config.sampling.n > 1:
        raise EvalsuiteError(f"--n {config.sampling.n} with greedy decoding (temperature 0) gives {config.sampling.n} "
                             "identical samples; set --temperature > 0 for pass@k with k > 1")
    server = config.generation.backend == "openai" or (config.generation.backend == "auto"
                                                        and config.generation.openai.base_url is not None)
    if config.sampling.max_length is not None and server:
        raise EvalsuiteError("--max-length needs a model loaded here (the prompt's tokens are counted with its "
                             "tokenizer); an OpenAI-compatible server takes --max-new-tokens only")
    if config.limit is not None and config.limit < 1:
        raise EvalsuiteError("--limit must be >= 1")
