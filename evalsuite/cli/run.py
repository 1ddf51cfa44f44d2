"""``evalsuite run``: for every model and task, generate -> execute -> score, then update the leaderboard.

With no arguments it evaluates the built-in ``reference`` model on HumanEval: the harness checking itself.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from evalsuite.cli import preflight
from evalsuite.cli.json_output import add_json_argument, print_json, stdout_to_stderr
from evalsuite.cli.option_groups import add_options, options_from_args
from evalsuite.cli.options import (
    SAMPLING_DEFAULTS,
    add_execution_args,
    add_fail_under_argument,
    add_limit,
    add_prompt_style,
    add_quiet,
    add_task_source_args,
    check_task_data_used,
    execution_options,
    load_registry,
    parse_ks,
    split_names,
    timeout_policy,
)
from evalsuite.devices import check_device_present
from evalsuite.errors import EvalsuiteError, ThresholdNotMet
from evalsuite.generation.options import GenerationOptions, HFOptions, OpenAIOptions
from evalsuite.models.options import LoadingOptions
from evalsuite.records import SamplingParams
from evalsuite.runs.identity import check_has_problems

# The sampling flags a preset may fill (a given flag wins); their defaults are SamplingParams's.
PRESET_SAMPLING = ("n", "temperature", "top_p", "top_k", "max_new_tokens", "max_length")


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
                                      "default: the alias or hub id, or a local checkpoint's folder name); the run "
                                      "folder is named after it too, so another name is another run, generated "
                                      "afresh")
    what.add_argument("--tasks", default="humaneval",
                      help="comma-separated task names (see `evalsuite tasks`; default: humaneval)")
    add_limit(what)
    add_task_source_args(what)

    sampling = parser.add_argument_group("protocol (flags override --preset)")
    sampling.add_argument("--preset", help="a named protocol from evalsuite/configs/presets: codex-pass1, "
                                           "codex-pass100, evalplus, bigcode, greedy")
    add_prompt_style(sampling, preset_may_set=True)
    sampling.add_argument("--strip-prompt", action=argparse.BooleanOptionalAction, default=None,
                          help="base style: feed the prompt without its trailing whitespace (bigcode's default)")
    sampling.add_argument("--k", help="pass@k values to report, e.g. 1,10,100 (default: those <= n of 1,10,100)")
    add_options(sampling, SamplingParams)  # every flag left unset in argparse: a preset fills it, a given flag wins

    model = parser.add_argument_group("model loading")
    add_options(model, GenerationOptions, only=("backend",))
    add_options(model, OpenAIOptions)
    add_options(model, LoadingOptions)
    add_options(model, HFOptions)
    model.add_argument("--spread", default="problems", choices=["problems", "models"],
                       help="under torchrun: shard each model's problems over the ranks, or give each rank whole "
                            "models (several models that each fit one GPU, at once) (default: problems)")

    execution = parser.add_argument_group("execution")
    add_execution_args(execution)

    output = parser.add_argument_group("output")
    output.add_argument("--output", default="runs", help="folder for run directories (default: runs/)")
    output.add_argument("--leaderboard-dir", "--leaderboard", dest="leaderboard_dir", default="leaderboard",
                        metavar="DIR", help="folder of the leaderboard this run is added to (default: leaderboard/)")
    output.add_argument("--no-leaderboard", action="store_true", help="do not update the leaderboard")
    add_fail_under_argument(output)
    add_quiet(output)
    add_json_argument(output)
    parser.set_defaults(handler=main)


def sampling_from_args(args: argparse.Namespace):
    from evalsuite.protocol.presets import load_preset

    values = {name: getattr(SAMPLING_DEFAULTS, name) for name in PRESET_SAMPLING}
    preset_ks = None
    if args.preset:
        preset = load_preset(args.preset).values
        preset_ks = preset.pop("k", None)
        values.update(preset)
    for name in PRESET_SAMPLING:
        given = getattr(args, name)
        if given is not None:
            values[name] = given
    seed = SAMPLING_DEFAULTS.seed if args.seed is None else args.seed
    sampling = SamplingParams(n=int(values["n"]), temperature=float(values["temperature"]),
                              top_p=float(values["top_p"]), top_k=int(values["top_k"]),
                              max_new_tokens=int(values["max_new_tokens"]), seed=seed,
                              max_length=None if values["max_length"] is None else int(values["max_length"]))
    if args.k is not None:
        ks = parse_ks(args.k)
    elif preset_ks:
        ks = sorted(int(k) for k in preset_ks)
    else:
        ks = [k for k in (1, 10, 100) if k <= sampling.n]
    return sampling, ks


def protocol_from_args(args: argparse.Namespace):
    """The prompt protocol: flags, else the preset's, else auto style without stripping."""
    from evalsuite.protocol.presets import load_preset
    from evalsuite.protocol.prompting import PromptProtocol

    values: dict = {"style": "auto", "strip_prompt": False}
    if getattr(args, "preset", None):
        preset = load_preset(args.preset).prompt
        values["style"] = preset.get("prompt_style", values["style"])
        strip = preset.get("strip_prompt", values["strip_prompt"])
        if isinstance(strip, (list, tuple)):  # the tasks whose prompts the preset strips (bigcode: HumanEval's)
            values["strip_prompt"], values["strip_tasks"] = bool(strip), tuple(str(task) for task in strip)
        else:
            values["strip_prompt"] = bool(strip)
        values["task_stops"] = tuple((str(task), tuple(str(s) for s in stops))
                                     for task, stops in (preset.get("stop_sequences") or {}).items())
        values["instruct_stops"] = tuple(str(s) for s in preset.get("instruct_stop_sequences") or ())
        direct = preset.get("direct_completion_stop_sequences") or {}
        values["direct_stops"] = tuple((str(task), tuple(str(s) for s in stops)) for task, stops in direct.items())
    if getattr(args, "prompt_style", None) is not None:
        values["style"] = args.prompt_style
    if getattr(args, "strip_prompt", None) is not None:  # the flag: every task
        values["strip_prompt"], values["strip_tasks"] = args.strip_prompt, ()
    return PromptProtocol(style=values["style"], strip_prompt=values["strip_prompt"],
                          strip_tasks=values.get("strip_tasks", ()), task_stops=values.get("task_stops", ()),
                          instruct_stops=values.get("instruct_stops", ()), direct_stops=values.get("direct_stops", ()))


def warn_partial(tasks, limit: int | None, stream=None) -> None:
    """``--limit`` is a smoke test, and a task's data that is not its own problem set (``--task-data``) another
    benchmark: say so, loudly, before any work; once, by rank 0 under torchrun or accelerate."""
    if os.environ.get("RANK", "0") != "0":
        return  # a worker rank: rank 0 says it (8 ranks said it 8 times)
    for task in tasks:
        total = len(task.problems())
        if task.problem_count not in (None, total):  # --task-data: a copy with other problems is another benchmark
            labelled = (f"labelled partial {total}/{task.problem_count}, as a --limit run's"
                        if total < task.problem_count else f"labelled other data {task.dataset_sha256[:8]}")
            print(f"warning: {task.name}'s data ({task.source}) holds {total} problems where the task has "
                  f"{task.problem_count}: its numbers are {labelled}, and compare only with runs on the same data",
                  file=stream or sys.stderr)
        if task.problem_count in (None, total) and task.runs_on_other_data():  # same count, other rows
            print(f"warning: {task.name}'s data ({task.source}) is not the task's own (sha256 "
                  f"{task.dataset_sha256[:8]}): its numbers are labelled other data and compare only with runs on "
                  "the same data", file=stream or sys.stderr)
        if limit and 0 < limit < total:
            print(f"warning: --limit {limit}: a smoke test on {limit} of the {total} problems of {task.name}; its "
                  "numbers are labelled partial and never replace a full run on the leaderboard",
                  file=stream or sys.stderr)


def main(args: argparse.Namespace) -> int:
    json_out = getattr(args, "json", False)
    try:  # everything inside, the pipeline's import too: a stop while it imports still prints the document
        with stdout_to_stderr(json_out):
            result = execute(args)
    except EvalsuiteError as failed:  # ModelFailed carries what the models came to, for --json
        reported = getattr(failed, "result", None)
        if json_out and reported is not None:
            print_json(reported.to_json())
        raise
    except KeyboardInterrupt as stop:
        if hasattr(stop, "result"):  # EvaluationInterrupted: what the models came to, for --json
            if json_out and stop.result is not None:
                print_json(stop.result.to_json())
            raise
        # during the imports or the checks before any model started: none ran, all are left
        if json_out and os.environ.get("RANK", "0") == "0":
            from evalsuite.runs.results import Interruption, RunResult

            name = signal.Signals(getattr(stop, "signum", None) or signal.SIGINT).name
            try:
                models = split_names(args.models)
            except EvalsuiteError:
                models = []
            print_json(RunResult(scores=[], ks=[], failures=[], interrupted=Interruption(name, "", models)).to_json())
        raise
    if result is None:  # a data-parallel worker rank (rank 0 reports), or a rank given no model
        return 0
    if json_out:
        print_json(result.to_json())
    if result.failures:
        if result.fail_under is not None and result.fail_under.shortfalls:  # said too: the exit status is the failure's
            from evalsuite.reporting.gate import shortfalls_text

            print(f"error: {shortfalls_text(result.fail_under.shortfalls)}", file=sys.stderr)
        names = ", ".join(failure.model for failure in result.failures)
        print(f"error: {len(result.failures)} model(s) failed: {names} (see above); the others' results stand",
              file=sys.stderr)
        return max(failure.exit_code for failure in result.failures)
    if result.fail_under is not None:  # checked on this run's own entries (see execute)
        from evalsuite.reporting.gate import raise_shortfalls

        raise_shortfalls(result.fail_under.shortfalls)
    return 0


def execute(args: argparse.Namespace, argv: list[str] | None = None):
    """Everything ``run`` does but the exit status: a :class:`evalsuite.runs.results.RunResult` (None on a worker
    rank). The table goes to stdout (stderr with ``--json``, nothing with ``--json --quiet``); the
    ``--fail-under`` gate is checked, not enforced. :func:`evalsuite.run` calls this too."""
    from evalsuite.runs.config import RunConfig
    from evalsuite.runs.pipeline import (
        EvaluationInterrupted,
        ModelFailed,
        print_results_table,
        resolve_models,
        run_evaluation,
    )
    from evalsuite.runs.results import FailUnder, Interruption, RunResult, score_from_outcome

    thresholds = args.fail_under
    json_out = getattr(args, "json", False)
    if args.quiet:
        quiet_libraries()
    registry = load_registry(args)
    task_names = split_names(args.tasks, "--tasks")
    check_task_data_used(args, task_names)
    tasks = [registry.get(name) for name in task_names]
    if args.preset:
        from evalsuite.protocol.presets import load_preset
        from evalsuite.tasks.evalplus_tasks import for_evaluation

        scored_as = load_preset(args.preset).evaluation
        tasks = [for_evaluation(task, scored_as) for task in tasks]
    for task in tasks:
        check_has_problems(task)  # a task's data that cannot be read, or is empty, fails now, before any folder
    sampling, ks = sampling_from_args(args)
    protocol = protocol_from_args(args)
    generation = options_from_args(GenerationOptions, args, only=("backend",),
                                   loading=options_from_args(LoadingOptions, args),
                                   hf=options_from_args(HFOptions, args), openai=options_from_args(OpenAIOptions, args),
                                   max_new_tokens=sampling.max_new_tokens)
    models = split_names(args.models)
    names = display_names(models, args.name)
    execution = execution_options(args)
    timeouts = timeout_policy(args)
    # Everything that can fail without the model fails here, before any model loads (see evalsuite.cli.preflight).
    preflight.check_generation_options(generation, sampling)
    preflight.check_model_files(models)
    preflight.check_fail_under(thresholds, ks)
    if thresholds and args.no_leaderboard:
        raise EvalsuiteError("--fail-under needs the leaderboard; drop --no-leaderboard")
    check_gpu_only_options(generation.loading)
    preflight.check_sandbox(execution.allow_unsandboxed, execution.isolation)
    specs = resolve_models(models, generation, names)  # each named apart and found (a typo'd hub id: no network)
    preflight.check_reference_has_solutions(specs, tasks, args.limit)
    preflight.check_prompt_styles(specs, generation, protocol.style)
    if not args.no_leaderboard:
        preflight.check_leaderboard(args.leaderboard_dir)  # a broken leaderboard.json: refused before any folder
    preflight.check_writable_dirs({"--output": args.output,  # the last checks: they make the folders
                                   **({} if args.no_leaderboard else {"--leaderboard-dir": args.leaderboard_dir})})
    warn_partial(tasks, args.limit)  # after every refusal: a refused command says one line
    config = RunConfig(models=models, tasks=tasks, sampling=sampling, ks=ks, limit=args.limit,
                       output_dir=Path(args.output), generation=generation, execution=execution,
                       timeouts=timeouts, show_progress=not args.quiet,
                       argv=sys.argv if argv is None else argv,
                       spread=args.spread, prompt=protocol, names=names,
                       leaderboard_dir=None if args.no_leaderboard else Path(args.leaderboard_dir))
    try:
        evaluation = run_evaluation(config)
    except ModelFailed as failed:  # the command's one model: its document says so, as for one of several
        if os.environ.get("RANK", "0") == "0":
            failed.result = RunResult(scores=[], ks=list(ks), failures=[failed.failure])
        raise
    except EvaluationInterrupted as stop:
        # What the finished models scored is final (their entries are on the leaderboard): shown, and returned
        # with the stop for --json; the stop itself goes on (the exit status names the signal).
        done = stop.evaluation
        if (done.outcomes or done.failures) and not (json_out and args.quiet):
            print_results_table(done.outcomes, ks, failures=done.failures)
        stop.result = RunResult(
            scores=[score_from_outcome(outcome) for outcome in done.outcomes], ks=list(ks),
            failures=list(done.failures),
            leaderboard=Path(args.leaderboard_dir) / "leaderboard.json" if done.entries else None,
            interrupted=Interruption(signal.Signals(stop.signum).name, stop.model, stop.not_started, stop.elsewhere))
        raise
    if evaluation is None or not (evaluation.outcomes or evaluation.failures):
        return None  # a data-parallel worker rank (rank 0 reports), or a rank given no model
    outcomes = evaluation.outcomes
    if not (json_out and args.quiet):
        print_results_table(outcomes, ks, failures=evaluation.failures)
    result = RunResult(scores=[score_from_outcome(outcome) for outcome in outcomes], ks=list(ks),
                       failures=list(evaluation.failures))
    if args.no_leaderboard:
        return result
    from evalsuite.reporting.gate import check_fail_under

    new_entries = evaluation.entries  # each added as soon as its run was scored
    if not args.quiet:
        print(f"leaderboard: {Path(args.leaderboard_dir) / 'leaderboard.json'} (page: index.html; each run's page: "
              "report.html in its folder)", file=sys.stderr)  # stdout holds the table alone
    # Gate on this run's own entries: an old, better entry must not hide today's regression.
    # A model that failed was never shown to meet it: a shortfall too (CI reads "met").
    unscored = [f"{failure.model}: not scored (it failed)" for failure in evaluation.failures]
    gate = FailUnder(dict(thresholds), check_fail_under(new_entries, thresholds) + unscored) if thresholds else None
    return RunResult(scores=result.scores, ks=result.ks, leaderboard=Path(args.leaderboard_dir) / "leaderboard.json",
                     fail_under=gate, failures=result.failures)


def quiet_libraries() -> None:
    """--quiet silences the libraries' progress bars too (transformers' "Loading weights", hub downloads):
    huggingface_hub reads the variable when imported; a transformers imported already is told directly."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def display_names(models: list[str], names: str | None) -> dict[str, str]:
    """``--name`` as {model: display name}: one name per model, in order."""
    if names is None:
        return {}
    given = split_names(names, "--name")  # --name "" (an unset variable) is refused, saying so, not ignored
    if len(given) != len(models):
        raise EvalsuiteError(f"--name gives {len(given)} name(s) for {len(models)} model(s); give one per model, "
                             "comma-separated, in the order of --models")
    return dict(zip(models, given))


def check_gpu_only_options(options: LoadingOptions) -> None:
    """Options that only make sense with a GPU fail fast, before any model is loaded."""
    from evalsuite.planner.strategies import strategy_named

    gpu_strategy = options.strategy not in (None, "", "auto") and strategy_named(str(options.strategy)).needs_gpu
    wants_gpu = (options.device or "").startswith("cuda") or options.gpu_memory is not None or gpu_strategy
    if not wants_gpu:
        return
    flag = ("--gpu-memory" if options.gpu_memory else f"--device {options.device}" if options.device
            and options.device.startswith("cuda") else f"--strategy {options.strategy}")
    try:
        import torch
    except ImportError:
        raise EvalsuiteError(f"{flag} needs PyTorch with CUDA; torch is not installed") from None
    if not torch.cuda.is_available():
        # a forced GPU strategy loaded the model, then ended in a traceback (the twenty-third session's red team)
        raise EvalsuiteError(f"{flag} needs a CUDA GPU, and none is visible on this machine")
    check_device_present(options.device)


__all__ = ["add_parser", "main", "ThresholdNotMet"]
