"""``evalsuite run``: for every model and task, generate -> execute -> score, then update the leaderboard.

With no arguments it evaluates the built-in ``reference`` model on HumanEval: the harness checking itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalsuite.cli.options import (add_execution_args, add_fail_under_argument, add_task_source_args,
                                       execution_options, load_registry, parse_ks, split_names, timeout_policy)
from evalsuite.cli.json_output import add_json_argument, print_json, stdout_to_stderr
from evalsuite.cli import preflight
from evalsuite.devices import check_device_present, parse_device
from evalsuite.errors import EvalsuiteError, ThresholdNotMet

SAMPLING_DEFAULTS = {"n": 1, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "max_new_tokens": 512}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "run", help="evaluate models on tasks (generate, execute, score, report)",
        description="Evaluate models on tasks. Completions are saved as they are made: rerun the same "
                    "command after an interruption and it resumes.")
    what = parser.add_argument_group("what to evaluate")
    what.add_argument("--models", default="reference",
                      help="comma-separated aliases (see `evalsuite models`), hub ids or local paths "
                           "(default: reference, the canonical solutions)")
    what.add_argument("--name", help="display name on the leaderboard and pages (comma-separated, one per model; "
                                      "default: the alias or hub id, or a local checkpoint's folder name)")
    what.add_argument("--tasks", default="humaneval",
                      help="comma-separated task names (see `evalsuite tasks`; default: humaneval)")
    what.add_argument("--limit", type=int, help="only the first N problems of each task: a smoke test, labelled "
                                                 "partial, that never replaces a full run on the leaderboard")
    add_task_source_args(what)

    sampling = parser.add_argument_group("protocol (flags override --preset)")
    sampling.add_argument("--preset", help="a named protocol from configs/presets: codex-pass1, codex-pass100, "
                                           "evalplus, bigcode, greedy")
    sampling.add_argument("--prompt-style", choices=["auto", "base", "instruct"],
                          help="base: continue the task's prompt; instruct: ask through the model's chat template "
                               "and extract the code; auto (default): instruct when the tokenizer has a chat template")
    sampling.add_argument("--strip-prompt", action=argparse.BooleanOptionalAction, default=None,
                          help="base style: feed the prompt without its trailing whitespace (bigcode's default)")
    sampling.add_argument("--n", type=int, help="samples per problem (default 1)")
    sampling.add_argument("--k", help="pass@k values to report, e.g. 1,10,100 (default: those <= n of 1,10,100)")
    sampling.add_argument("--temperature", type=float, help="0 means greedy (default 0)")
    sampling.add_argument("--top-p", type=float, help="nucleus sampling: keep the smallest set of tokens whose "
                                                      "probability reaches P, 0 < P <= 1 (default 1.0: off)")
    sampling.add_argument("--top-k", type=int, help="sample among the K most likely tokens (default 0: off)")
    sampling.add_argument("--max-new-tokens", type=int, help="tokens generated per completion at most (default 512)")
    sampling.add_argument("--seed", type=int, default=0, help="sampling seed; each sample's stream is derived from it, "
                                                              "the problem and the sample index (default 0)")

    model = parser.add_argument_group("model loading")
    model.add_argument("--backend", default="auto", choices=["auto", "hf", "openai", "reference"],
                       help="hf: load the model here with transformers; openai: ask the OpenAI-compatible server at "
                            "--base-url; reference: the canonical solutions; auto (default): reference for "
                            "'reference', openai when --base-url is given, else hf")
    model.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    model.add_argument("--api-key-env", default="OPENAI_API_KEY",
                       help="environment variable holding the API key (the key is never recorded; default: "
                            "OPENAI_API_KEY)")
    model.add_argument("--concurrency", type=int, default=8, help="openai backend: requests in flight (default 8)")
    model.add_argument("--max-retries", type=int, default=6,
                       help="openai backend: retries on 429/5xx, with exponential backoff (default 6)")
    model.add_argument("--request-timeout", type=float, default=600.0, help="openai backend: seconds per request (default 600)")
    model.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda when available)")
    model.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "float16"],
                       help="weights' dtype (default auto: float32 on CPU; on GPU the registry's, else the "
                            "checkpoint's, else bfloat16)")
    model.add_argument("--batch-size", type=int, help="default: chosen from free memory")
    model.add_argument("--threads", type=int, help="CPU threads for generation (default: the cores not busy when "
                                                   "the run starts, at least 1; recorded)")
    model.add_argument("--trust-remote-code", action="store_true",
                       help="run the model repository's own Python code (needed by some hub models; off by default)")
    model.add_argument("--revision", help="hub models: the branch, tag or commit to load (default: the default "
                                          "branch); recorded in the run's identity; refused for local folders, "
                                          "GGUF files and the reference model")
    model.add_argument("--strategy", help="force a loading strategy (see `evalsuite plan`)")
    model.add_argument("--gpu-memory", help="cap per GPU, e.g. 16GiB (emulates a smaller card)")
    model.add_argument("--cpu-memory", help="cap on CPU memory for offload, e.g. 100GiB")
    model.add_argument("--offload-dir", help="folder for disk/NVMe offload")
    model.add_argument("--spread", default="problems", choices=["problems", "models"],
                       help="under torchrun: shard each model's problems over the ranks (default), or give "
                            "each rank whole models (several models that each fit one GPU, at once)")
    model.add_argument("--engine", default="auto", choices=["auto", "transformers", "evalsuite"],
                       help="auto (default): evalsuite's engine where it applies (CUDA, a covered family), else "
                            "plain transformers generate; transformers: always plain generate; evalsuite: the "
                            "engine wherever it can run, the CPU included (slow there: for checks)")

    execution = parser.add_argument_group("execution")
    add_execution_args(execution)

    output = parser.add_argument_group("output")
    output.add_argument("--output", default="runs", help="folder for run directories (default: runs/)")
    output.add_argument("--leaderboard-dir", "--leaderboard", dest="leaderboard_dir", default="leaderboard",
                        metavar="DIR", help="folder of the leaderboard this run is added to (default: leaderboard/)")
    output.add_argument("--no-leaderboard", action="store_true", help="do not update the leaderboard")
    add_fail_under_argument(output)
    output.add_argument("--quiet", "-q", action="store_true", help="no progress bars (for CI logs)")
    add_json_argument(output)
    parser.set_defaults(handler=main)


def sampling_from_args(args: argparse.Namespace):
    from evalsuite.protocol.presets import load_preset
    from evalsuite.records import SamplingParams

    values = dict(SAMPLING_DEFAULTS)
    preset_ks = None
    if args.preset:
        preset = load_preset(args.preset).values
        preset_ks = preset.pop("k", None)
        values.update(preset)
    for name in SAMPLING_DEFAULTS:
        given = getattr(args, name)
        if given is not None:
            values[name] = given
    sampling = SamplingParams(n=int(values["n"]), temperature=float(values["temperature"]),
                              top_p=float(values["top_p"]), top_k=int(values["top_k"]),
                              max_new_tokens=int(values["max_new_tokens"]), seed=args.seed)
    if args.k:
        ks = parse_ks(args.k)
    elif preset_ks:
        ks = sorted(int(k) for k in preset_ks)
    else:
        ks = [k for k in (1, 10, 100) if k <= sampling.n]
    return sampling, ks


def protocol_from_args(args: argparse.Namespace):
    """The prompt protocol: flags, else the preset's, else auto style without stripping."""
    from evalsuite.protocol.prompting import PromptProtocol
    from evalsuite.protocol.presets import load_preset

    values: dict = {"style": "auto", "strip_prompt": False}
    if getattr(args, "preset", None):
        preset = load_preset(args.preset).prompt
        values["style"] = preset.get("prompt_style", values["style"])
        values["strip_prompt"] = bool(preset.get("strip_prompt", values["strip_prompt"]))
        values["task_stops"] = tuple((str(task), tuple(str(s) for s in stops))
                                     for task, stops in (preset.get("stop_sequences") or {}).items())
    if getattr(args, "prompt_style", None) is not None:
        values["style"] = args.prompt_style
    if getattr(args, "strip_prompt", None) is not None:
        values["strip_prompt"] = args.strip_prompt
    return PromptProtocol(style=values["style"], strip_prompt=values["strip_prompt"],
                          task_stops=values.get("task_stops", ()))


def warn_partial(tasks, limit: int | None, stream=None) -> None:
    """``--limit`` is a smoke test: say so, loudly, before any work."""
    if not limit or limit < 1:
        return  # nothing, or an error validate_config reports
    for task in tasks:
        total = len(task.problems())
        if limit < total:
            print(f"warning: --limit {limit}: a smoke test on {limit} of the {total} problems of {task.name}; its "
                  "numbers are labelled partial and never replace a full run on the leaderboard",
                  file=stream or sys.stderr)


def main(args: argparse.Namespace) -> int:
    json_out = getattr(args, "json", False)
    with stdout_to_stderr(json_out):
        result = execute(args)
    if result is None:  # a data-parallel worker rank (rank 0 reports), or a rank given no model
        return 0
    if json_out:
        print_json(result.to_json())
    if result.fail_under is not None:  # checked on this run's own entries (see execute)
        from evalsuite.reporting.leaderboard import raise_shortfalls

        raise_shortfalls(result.fail_under.shortfalls)
    return 0


def execute(args: argparse.Namespace, argv: list[str] | None = None):
    """Everything ``run`` does but the exit status: a :class:`evalsuite.run.results.RunResult` (None on a worker
    rank). The table goes to stdout (stderr with ``--json``, nothing with ``--json --quiet``); the
    ``--fail-under`` gate is checked, not enforced. :func:`evalsuite.run` calls this too."""
    from evalsuite.generation.base import GenerationOptions
    from evalsuite.run.results import FailUnder, RunResult, score_from_outcome
    from evalsuite.run.config import RunConfig
    from evalsuite.run.pipeline import print_results_table, run_evaluation

    thresholds = args.fail_under
    json_out = getattr(args, "json", False)
    if args.quiet:
        quiet_libraries()
    registry = load_registry(args)
    tasks = [registry.get(name) for name in split_names(args.tasks)]
    for task in tasks:
        task.problems()  # a task's data that cannot be read fails now, before any folder is made (cached)
    sampling, ks = sampling_from_args(args)
    protocol = protocol_from_args(args)
    warn_partial(tasks, args.limit)
    generation = GenerationOptions(
        backend=args.backend, device=parse_device(args.device), dtype=None if args.dtype in (None, "auto") else args.dtype,
        batch_size=args.batch_size, base_url=args.base_url, api_key_env=args.api_key_env,
        concurrency=args.concurrency, max_retries=args.max_retries, request_timeout_s=args.request_timeout,
        trust_remote_code=args.trust_remote_code, strategy=args.strategy, gpu_memory=args.gpu_memory,
        cpu_memory=args.cpu_memory, offload_dir=args.offload_dir, engine=args.engine, threads=args.threads,
        max_new_tokens=sampling.max_new_tokens, revision=args.revision)
    models = split_names(args.models)
    names = display_names(models, args.name)
    execution = execution_options(args)
    # Everything that can fail without the model fails here, before any model loads (see evalsuite.cli.preflight).
    preflight.check_sizes({"--gpu-memory": args.gpu_memory, "--cpu-memory": args.cpu_memory})
    preflight.check_generation_options(generation, sampling)
    preflight.check_model_files(models)
    preflight.check_fail_under(thresholds, ks)
    if thresholds and args.no_leaderboard:
        raise EvalsuiteError("--fail-under needs the leaderboard; drop --no-leaderboard")
    preflight.check_writable_dir(args.output, "--output")
    if not args.no_leaderboard:
        preflight.check_writable_dir(args.leaderboard_dir, "--leaderboard-dir")
    check_gpu_only_options(generation)
    preflight.check_sandbox(args.allow_unsandboxed)
    config = RunConfig(models=models, tasks=tasks, sampling=sampling, ks=ks, limit=args.limit,
                       output_dir=Path(args.output), generation=generation, execution=execution,
                       timeouts=timeout_policy(args), show_progress=not args.quiet,
                       argv=sys.argv if argv is None else argv,
                       spread=args.spread, prompt=protocol, names=names,
                       leaderboard_dir=None if args.no_leaderboard else Path(args.leaderboard_dir))
    outcomes = run_evaluation(config)
    if not outcomes:  # a data-parallel worker rank (rank 0 reports), or a rank given no model
        return None
    if not (json_out and args.quiet):
        print_results_table(outcomes, ks)
    result = RunResult(scores=[score_from_outcome(outcome) for outcome in outcomes], ks=list(ks))
    if args.no_leaderboard:
        return result
    from evalsuite.reporting.leaderboard import check_fail_under
    from evalsuite.run.finish import add_to_leaderboard

    new_entries = add_to_leaderboard(Path(args.leaderboard_dir), [outcome.leaderboard_summary() for outcome in outcomes])
    if not args.quiet:
        print(f"leaderboard: {Path(args.leaderboard_dir) / 'leaderboard.json'} (page: index.html; each run's page: "
              "report.html in its folder)")
    # Gate on this run's own entries: an old, better entry must not hide today's regression.
    gate = FailUnder(dict(thresholds), check_fail_under(new_entries, thresholds)) if thresholds else None
    return RunResult(scores=result.scores, ks=result.ks, leaderboard=Path(args.leaderboard_dir) / "leaderboard.json",
                     fail_under=gate)


def quiet_libraries() -> None:
    """--quiet silences the libraries' progress bars too (transformers' "Loading weights", hub downloads):
    huggingface_hub reads the variable when imported; a transformers imported already is told directly."""
    import os

    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def display_names(models: list[str], names: str | None) -> dict[str, str]:
    """``--name`` as {model: display name}: one name per model, in order."""
    if not names:
        return {}
    given = [part.strip() for part in names.split(",")]
    if len(given) != len(models) or not all(given):
        raise EvalsuiteError(f"--name gives {len(given)} name(s) for {len(models)} model(s); give one per model, "
                             "comma-separated, in the order of --models")
    return dict(zip(models, given))


def check_gpu_only_options(options) -> None:
    """Options that only make sense with a GPU fail fast, before any model is loaded."""
    wants_gpu = (options.device or "").startswith("cuda") or options.gpu_memory is not None
    if not wants_gpu:
        return
    try:
        import torch
    except ImportError:
        raise EvalsuiteError("--device cuda / --gpu-memory need PyTorch with CUDA; torch is not installed") from None
    if not torch.cuda.is_available():
        flag = "--gpu-memory" if options.gpu_memory else f"--device {options.device}"
        raise EvalsuiteError(f"{flag} needs a CUDA GPU, and none is visible on this machine")
    check_device_present(options.device)


__all__ = ["add_parser", "main", "ThresholdNotMet"]
