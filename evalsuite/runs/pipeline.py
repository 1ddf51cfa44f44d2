"""The pipeline for every (model, task): generate -> execute -> finish (score, record, page, leaderboard entry).

Like vLLM's split of scheduler/worker/runner, each stage is its own module; this one only sequences them:
what a run is (:mod:`evalsuite.runs.identity`), how the model is asked (:mod:`evalsuite.protocol.asking`),
generation and resume (:mod:`evalsuite.runs.generate`), execution, and the finishing path it shares with
``evaluate`` (:mod:`evalsuite.runs.finish`), keeping the :class:`~evalsuite.runs.record.RunRecord` as it goes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsuite.devices import release_device_memory
from evalsuite.environment import hardware, package_versions
from evalsuite.errors import EvalsuiteError, one_line, storage_error
from evalsuite.execution.timeouts import execute_with_timeouts, limit_span
from evalsuite.generation.base import Generator
from evalsuite.jsonl import atomic_write_json, atomic_write_jsonl
from evalsuite.protocol.asking import decide_asking
from evalsuite.records import SampleResult
from evalsuite.reporting.entries import RunSummary
from evalsuite.reporting.views.run_page import PAGE_FILE
from evalsuite.runs.claims import RunClaim, claim_name
from evalsuite.runs.config import RunConfig, validate_config
from evalsuite.runs.distributed import DistContext, RankLost, context_from_env, shutdown
from evalsuite.runs.finish import RunFacts, ScoredRun, add_to_leaderboard, entries_saved, finish
from evalsuite.runs.generate import generate_missing, keep_remade, load_completions, remade
from evalsuite.runs.identity import check_has_problems, problem_set, prompt_settings, run_identity, select_problems
from evalsuite.runs.invocations import Invocation, earlier_invocations, made_by
from evalsuite.runs.invocations import totals as invocation_totals
from evalsuite.runs.plan_line import Workload, announce_plan
from evalsuite.runs.record import ModelDescription, RecordedTask, RunRecord, per_problem_results
from evalsuite.runs.results import ModelFailure
from evalsuite.runs.resume import RecordedModel, checkpoint_revision, finished_record, prompt_key
from evalsuite.runs.resume import request_key as make_request_key
from evalsuite.runs.rundir import RunDir, run_key
from evalsuite.scoring import Score, ScoreSummary
from evalsuite.tasks.task import Task
from evalsuite.version import __version__

if TYPE_CHECKING:
    from evalsuite.generation.options import GenerationOptions
    from evalsuite.models.registry import ModelSpec


@dataclass(frozen=True)
class RankShare:
    """What one rank made of its shard, gathered on rank 0: the results to score and the figures that show
    whether a slow rank held the others (the record lists each rank's under ``distributed.ranks``)."""

    rank: int
    results: list[SampleResult]
    generated: int
    tokens: float  # as generate_missing counts them
    generate_s: float
    execute_s: float
    problems: int
    cpus: int  # how many CPUs the rank ran on: its block of the node's, or its launcher's set where that was narrowed
    execution: dict[str, Any]  # the rank's sandbox, as execute_with_timeouts describes it

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "problems": self.problems, "cpus": self.cpus,
                "completions_generated": self.generated,
                "tokens_generated": int(self.tokens), "generate_s": round(self.generate_s, 3),
                "execute_s": round(self.execute_s, 3),
                "sandbox": {key: self.execution.get(key) for key in RANK_SANDBOX_KEYS}}


RANK_SANDBOX_KEYS = ("mode", "isolation", "limits", "workers", "worker_restarts")


def merged_execution(shares: Sequence[RankShare]) -> dict[str, Any]:
    """The run's sandbox over every rank: rank 0's description, where each rank's own mode, isolation and limits
    are listed together when they differ (nodes of one job need not have the same sandbox: a rank without
    bubblewrap under --allow-unsandboxed ran its samples with rlimits only, and the record must not say otherwise),
    and the counts, the wall time and each problem's time limit are every rank's (rank 0's alone said half the
    samples executed)."""
    infos = [share.execution for share in shares]
    merged = dict(infos[0])
    for key in ("mode", "isolation", "limits"):
        seen = sorted({str(info.get(key)) for info in infos})
        if len(seen) > 1:
            merged[key] = ",".join(seen)
    for key in ("workers", "worker_restarts", "n_executed"):
        if key in merged:
            merged[key] = sum(int(info.get(key) or 0) for info in infos)
    if "wall_s" in merged:
        merged["wall_s"] = max(float(info.get("wall_s") or 0) for info in infos)  # the ranks execute side by side
        merged["executions_per_s"] = round(merged.get("n_executed", 0) / max(merged["wall_s"], 1e-9), 1)
    timeouts: list[dict[str, Any]] = [info["timeouts"] for info in infos if isinstance(info.get("timeouts"), dict)]
    if timeouts and "per_problem_s" in timeouts[0]:
        limits = {task_id: limit for info in timeouts for task_id, limit in (info.get("per_problem_s") or {}).items()}
        merged["timeouts"] = {**timeouts[0], "per_problem_s": limits,
                              "measured_now": sum(int(info.get("measured_now") or 0) for info in timeouts),
                              "fallback_problems": sorted({p for info in timeouts
                                                           for p in info.get("fallback_problems") or []}),
                              "canonical_failed": {k: v for info in timeouts
                                                   for k, v in (info.get("canonical_failed") or {}).items()},
                              "limit_s": limit_span(limits.values())}
    return merged


@dataclass
class RunOutcome:
    """What one (model, task) run produced; ``record`` is what was written to record.json."""

    model: str
    task: str
    run_dir: RunDir
    score: Score
    record: RunRecord
    generated_now: int  # completions generated by this invocation (0 when everything was resumed)

    def leaderboard_summary(self) -> RunSummary:
        """The input :func:`evalsuite.reporting.entries.entry_from_run` expects."""
        facts = RunFacts.from_record(self.record)
        return facts.leaderboard_summary(self.score.summary(), self.run_dir.path / PAGE_FILE)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_one(generator: Generator, spec: ModelSpec, task: Task, config: RunConfig, load_seconds: float,
            ctx: DistContext = DistContext(), placement: dict[str, Any] | None = None, display_name: str | None = None,
            request_key: str | None = None, claims: list[RunClaim] | None = None) -> RunOutcome | None:
    """One (model, task) run. Under data parallelism every rank calls this; rank 0 returns the outcome.

    The run folder is claimed before anything is written in it (its claim is added to ``claims``, which the
    caller releases): the claim taken before loading names the flags as given, and two commands whose different
    flags come to the same settings (``--dtype float32`` on a CPU, ``--prompt-style base`` for a model without a
    chat template) meet here, not in the folder's rows.

    ``spec`` is the model as resolved once by :func:`run_evaluation` (its name as the user gave it, where it
    loads from, its stop sequences and revision); ``display_name`` what the views call it (default: the name
    given); ``placement`` says where it ran (ranks, host, device) for the record.
    """
    requested, model_name = spec.name, display_name or spec.name
    model_id, model_stops, revision = spec.location, spec.extra_stop_sequences, spec.revision
    problems = select_problems(task, config.limit)
    valid_ids = {p.task_id for p in problems}
    protocol = config.prompt.for_task(task.name)
    decision = generator.decide_prompt_style(protocol.style)
    opened_fence = decision.style == "instruct" and generator.opens_code_fence()
    asking, stops = decide_asking(decision, opened_fence, task, model_stops, protocol)
    # EvalPlus's direct completion strips every prompt itself: --strip-prompt there is the same run, not another
    prompt = prompt_settings(decision, replace(protocol, strip_prompt=False) if asking.direct_completion else protocol,
                             stops)
    if asking.protocol:  # keys the leaderboard entry: another protocol's number never replaces this one's
        prompt["protocol"] = asking.protocol
    if asking.direct_completion:
        prompt["direct_completion"] = ("EvalPlus 0.3.1 (evalplus/codegen.py): prompt.strip() + newline, its stop set, "
                                       "prompt + completion sanitized and run as the program")
    identity = run_identity(model_id, task, problems, stops, config.sampling, generator.weights_identity(),
                            prompt=prompt, revision=revision,
                            model=generator.identity() | generator.answers_identity(
                                [p.canonical_solution for p in problems]))
    run_dir = RunDir.for_run(config.output_dir, model_name, task.name, run_key(identity))
    what = f"{model_name}/{task.name}"
    held = claims_on_every_rank([partial(RunClaim.take, config.output_dir, f"folder__{run_dir.run_id}", ctx.rank, what),
                                 partial(RunClaim.take_in, run_dir.path, ctx.rank, what)],  # other caches or hosts
                                ctx, model_name, "could not claim its run folder")
    if claims is not None:
        claims.extend(held)
    previous = run_dir.check_identity(identity)
    run_dir.path.mkdir(parents=True, exist_ok=True)
    if ctx.is_main:
        run_dir.remove_leftover_temporaries()  # of a killed invocation's writes: this one holds the folder now
    invocation_id = ctx.agree(uuid.uuid4().hex)  # every rank's rows name the invocation the record lists
    invocation = Invocation(invocation_id, _now(), load_s=round(load_seconds, 3))
    history = earlier_invocations(previous,
                                  lambda: run_dir.existing_completions(valid_ids, config.sampling.n).values())
    record = RunRecord(
        run_id=run_dir.run_id, request_key=request_key, opened_fence=asking.opened_fence,
        model_loaded=not isinstance(generator, RecordedModel), invocation_id=invocation_id, status="running",
        started_at=_now(), argv=list(config.argv), identity=identity,
        model=ModelDescription(requested, model_name, model_id, generator.describe()),
        task=RecordedTask(task.name, task.dataset_sha256, task.source, len(problems), task.prompt_template,
                          list(stops), task.provenance(), problem_set(task, problems), task.runs_on_other_data()),
        prompt=prompt, sampling=config.sampling, k=list(config.ks), limit=config.limit,
        generation_options=config.generation.to_dict(), distributed=placement or {"world_size": ctx.world_size},
        environment={"versions": package_versions(), "hardware": hardware(), "evalsuite": __version__},
        invocations=[*history, invocation.to_json()])
    if ctx.is_main:
        atomic_write_json(run_dir.record, record.to_json())
    label = f"{model_name}/{task.name}"
    my_problems = ctx.shard(problems)

    started = time.perf_counter()
    generate_seconds: float | None = None

    def record_the_stop(exc: BaseException) -> None:
        """record.json says how this invocation ended and what it made, never "running" after it."""
        invocation.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        elapsed = generate_seconds if generate_seconds is not None else time.perf_counter() - started
        invocation.finished_at, invocation.generate_s = _now(), round(elapsed, 3)
        if not ctx.is_main:
            return
        if ctx.world_size > 1:  # every rank's rows saved so far, not only this shard's (the next run recounts)
            try:
                rows = run_dir.existing_completions(valid_ids, config.sampling.n).values()
                made = made_by(rows, [invocation_id])[invocation_id]
                invocation.completions_generated, invocation.tokens_generated = made
            except EvalsuiteError:
                pass  # a rank's file being written: the next invocation counts its rows
        record.status = invocation.status  # not "running": this invocation ended here
        record.finished_at = record.summary = record.per_problem = None  # no score: the rerun makes it
        record.invocations = [*history, invocation.to_json()]
        try:
            atomic_write_json(run_dir.record, record.to_json())
        except OSError:  # the disk that stopped the run (full, read-only): the rerun recounts what is there
            pass

    try:
        failure: Exception | None = None
        try:
            generated, tokens = generate_missing(generator, task, my_problems, stops, config.sampling, run_dir,
                                                 label, config.show_progress and ctx.is_main, valid_ids,
                                                 ctx.completions_name(), asking=asking, invocation_id=invocation_id,
                                                 tally=invocation)
            generate_seconds = time.perf_counter() - started

            samples = load_completions(run_dir, my_problems, config.sampling.n, valid_ids, task, asking)
            executing = time.perf_counter()
            executed = asking.executed(task)
            results, execution_info = execute_with_timeouts(executed, samples, config.execution, config.timeouts)
            execute_seconds = time.perf_counter() - executing
        except Exception as exc:  # noqa: BLE001 - under data parallelism told to every rank below, then raised
            if not ctx.enabled or isinstance(exc, RankLost):
                raise
            failure = exc
        # A rank whose share failed used to stop alone, and torchrun stopped the others and every later model.
        _raise_if_failed_anywhere(ctx, label, failure, "failed on its share")
        assert generate_seconds is not None  # no rank failed: this one's share ran to its end

        gathered: list[RankShare] | None = ctx.gather(RankShare(
            ctx.rank, results, generated, tokens, generate_seconds, execute_seconds, len(my_problems), ctx.cpus,
            execution_info))
    except BaseException as exc:  # a signal, a failure or a lost rank: the record says what this invocation made
        record_the_stop(exc)
        raise
    if not ctx.is_main or gathered is None:
        return None

    def score_and_write(gathered: list[RankShare]) -> RunOutcome:
        """Every rank's results merged, then results.jsonl, summary.json, the completed record and the pages."""
        by_task: dict[str, list[SampleResult]] = {}
        for share in gathered:
            for result in share.results:
                by_task.setdefault(result.task_id, []).append(result)
        results = [r for p in problems for r in sorted(by_task.get(p.task_id, []), key=lambda r: r.completion_id)]
        generated = sum(share.generated for share in gathered)
        tokens = sum(share.tokens for share in gathered)
        generate_seconds = max(share.generate_s for share in gathered)  # the slowest rank's: the wall time
        execute_seconds = max(share.execute_s for share in gathered)
        execution_info = merged_execution(gathered)

        def complete(summary: ScoreSummary, score_seconds: float) -> RunRecord:
            """The record once scored: this invocation's figures, the totals over every invocation, the score."""
            invocation.status, invocation.finished_at = "complete", _now()
            invocation.completions_generated, invocation.tokens_generated = generated, int(tokens)
            invocation.generate_s = round(generate_seconds, 3)
            invocations = [*history, invocation.to_json()]
            overall = invocation_totals(invocations)
            record.status, record.finished_at = "complete", _now()
            # Described again now: some choices (the engine that ran, batch halvings) are made while generating.
            record.model = ModelDescription(requested, model_name, model_id, generator.describe())
            record.execution = execution_info
            # generate: every invocation's generation time together (a resume with nothing left to generate keeps
            # the real figure); generate_now: this invocation's alone.
            record.timings_s = {"load": round(load_seconds, 3), "generate": overall["generate_s"],
                                "generate_now": round(generate_seconds, 3), "execute": round(execute_seconds, 3),
                                "score": round(score_seconds, 3)}
            record.generation_stats = {"completions_generated_now": generated,
                                       "completions_resumed": len(results) - generated,
                                       "tokens_generated_now": int(tokens),
                                       "completions_generated_total": overall["completions_generated"],
                                       "tokens_generated_total": overall["tokens_generated"],
                                       "tokens_per_s": overall["tokens_per_s"]}
            record.invocations = invocations
            if ctx.enabled:
                record.distributed = {**record.distributed, "ranks": [share.to_json() for share in gathered]}
            record.summary = summary.to_json(per_problem=False)
            record.per_problem = per_problem_results(results)
            return record

        # every rank's rows as scored (remade by the task's code as it is now), kept so in the completions files
        by_id = {p.task_id: p for p in problems}
        saved = run_dir.existing_completions(valid_ids, config.sampling.n)
        rows = {key: remade(row, by_id[key[0]], task, asking) for key, row in saved.items()}
        keep_remade(run_dir, saved, rows)
        scored_run = ScoredRun(folder=run_dir.path, task=task, executed=executed, problems=problems, results=results,
                               samples=rows.values(),
                               prompts={p.task_id: asking.prompt_for(task, p) for p in problems},
                               leaderboard_dir=config.leaderboard_dir)
        summary_fields = {"run_id": run_dir.run_id, "model": model_name, "task": task.name,
                          "dataset_sha256": task.dataset_sha256, "n": config.sampling.n,
                          "sandbox_mode": execution_info.get("mode")}
        atomic_write_jsonl(run_dir.results, (r.to_json() for r in results))
        finished = finish(scored_run, config.ks, summary_fields, complete=complete)
        return RunOutcome(model=model_name, task=task.name, run_dir=run_dir, score=finished.score, record=record,
                          generated_now=generated)

    try:
        return score_and_write(gathered)
    except BaseException as exc:  # stopped while writing the results: the record said "running"
        if _status_on_disk(run_dir.record) != "complete":
            record_the_stop(exc)
        raise


def _status_on_disk(path: Path) -> str | None:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return None


@dataclass
class Evaluation:
    """What one command's models produced: the scored runs, the leaderboard entries they added (each as soon as
    its run was scored) and the models that failed while the others ran."""

    outcomes: list[RunOutcome]
    entries: list[Any]
    failures: list[ModelFailure]


class EvaluationInterrupted(KeyboardInterrupt):
    """A command stopped part-way (Ctrl-C, SIGTERM, SIGHUP): the models it had finished stand (scored, on the
    leaderboard) and are in ``evaluation``; ``model`` is the one that was running, ``not_started`` those after it.
    It is a KeyboardInterrupt with the stop's ``signum``, so whoever handles a stop handles this one alike;
    ``result`` is what ``run`` reports of it (set by :func:`evalsuite.cli.run.execute` for ``--json``)."""

    def __init__(self, stop: KeyboardInterrupt, evaluation: Evaluation, model: str, not_started: list[str],
                 elsewhere: list[str] | None = None):
        super().__init__(*stop.args)
        self.signum = int(getattr(stop, "signum", None) or signal.SIGINT)
        self.evaluation, self.model, self.not_started = evaluation, model, not_started
        self.elsewhere = elsewhere or []  # --spread models: the other ranks' models, whose outcome rank 0 never got
        self.result: Any = None


def run_evaluation(config: RunConfig) -> Evaluation | None:
    """Run every model on every task. Models are resolved before any work, so a typo fails in a second.

    Each model runs as if alone: its generator is closed (everything it put on a GPU released) before the next
    one loads, its results and leaderboard entry are final as soon as it is scored, and a model that fails (a
    load error, out of memory, a bad checkpoint) is reported and the others still run. Under torchrun /
    accelerate launch each rank takes a shard; rank 0 returns the evaluation, others None.
    """

    validate_config(config)
    if config.spread not in ("problems", "models"):
        raise EvalsuiteError(f"--spread must be 'problems' or 'models', got {config.spread!r}")
    specs = resolve_models(config.models, config.generation, config.names)
    for task in config.tasks:
        check_has_problems(task)  # load and validate every dataset before loading any model
    ctx = context_from_env()
    if config.spread == "models" and not ctx.enabled:  # said, not refused: the same results, one after another
        print("warning: --spread models gives each torchrun rank whole models; this command is one process, so "
              "its models run one after another (launch it with torchrun --nproc-per-node N -m evalsuite -- run "
              "... to run N at once)", file=sys.stderr)
    generation = config.generation
    if ctx.enabled and generation.loading.device is None and generation.backend != "openai":
        generation = replace(generation, loading=replace(generation.loading, device=ctx.device))
    assignments = list(zip(config.models, specs))
    every_display = [display_name(name, spec, config.names) for name, spec in assignments]
    displays = every_display  # this rank's models' names, in the order it runs them
    run_ctx, waiting = ctx, None
    if ctx.enabled and config.spread == "models":
        assignments = assignments[ctx.rank::ctx.world_size]  # whole models per rank; each runs alone
        displays = every_display[ctx.rank::ctx.world_size]
        run_ctx, waiting = DistContext(), ctx.patient_group()
    elif ctx.enabled:  # the ranks' shares of a model end apart (a slow share, a failed one): wait as long as it takes
        run_ctx = replace(ctx, patient=ctx.patient_group())
    placement = {"world_size": ctx.world_size, "rank": ctx.rank, "spread": config.spread if ctx.enabled else None,
                 "host": socket.gethostname(), "device": generation.loading.device}
    outcomes: list[RunOutcome] = []
    entries: list[Any] = []
    failures: list[ModelFailure] = []
    begun, running = 0, ""  # how many of this rank's models have begun; the one running ("" between models)
    publishing: list[Any] = []  # summaries whose leaderboard update is under way (a stop in it may have saved them)
    try:
        for position, (_, spec) in enumerate(assignments):
            display = displays[position]
            begun, running = position + 1, display
            generator = None
            claims: list[RunClaim] = []
            try:
                problem_ids = {task.name: [p.task_id for p in select_problems(task, config.limit)]
                               for task in config.tasks}
                _claim_on_every_rank(claims, spec, config, generation, problem_ids, run_ctx, display)
                revision = checkpoint_revision(spec)  # the files as the keys see them
                keys = {task.name: make_request_key(spec, task, problem_ids[task.name],
                                                    replace(config, generation=generation)) for task in config.tasks}
                # rank 0's view of the folder on every rank: ranks that share a model's work decide alike
                recorded = run_ctx.agree(_finished_runs(config, display, keys, revision) if run_ctx.is_main else {})
                started = time.perf_counter()
                # Nothing left to generate for any task: the recorded model stands in, no weights are loaded.
                generator = None if len(recorded) == len(config.tasks) else _load_on_every_rank(
                    spec, generation, run_ctx, display)
                loaded = generator.identity().get("revision") if generator is not None else None
                if revision is not None and loaded is not None and loaded != revision:  # keyed by the old files
                    raise EvalsuiteError(f"{display}: the checkpoint's files changed between the command's start and "
                                         "the load: rerun once they are settled")
                load_seconds = time.perf_counter() - started
                if generator is not None and run_ctx.is_main:
                    work = workload(config)
                    announce_plan(display, generator.describe(), work, config.show_progress,
                                  generator.expected_tokens_per_s(rows=work.samples))
                for task in config.tasks:
                    acting = generator or RecordedModel(recorded[task.name])
                    outcome = run_one(acting, spec, task, config, load_seconds, run_ctx, placement,
                                      display_name=display, request_key=keys[task.name], claims=claims)
                    if outcome is not None:
                        outcomes.append(outcome)
                        if config.leaderboard_dir is not None:  # final now, whatever happens to the next model
                            publishing = [outcome.leaderboard_summary()]
                            entries += add_to_leaderboard(config.leaderboard_dir, publishing)
                            publishing = []
            except Exception as raised:  # noqa: BLE001 - one model's failure, reported; the others still run
                written = " or ".join(str(f) for f in (config.output_dir, config.leaderboard_dir) if f is not None)
                exc = storage_error(raised, written) or raised  # a full disk: one line; --json still says so
                if len(config.models) == 1 and isinstance(exc, EvalsuiteError) and not isinstance(exc, RankLost):
                    raise ModelFailed(display, exc) from exc  # stops the command, with a --json document
                if len(config.models) == 1 or run_ctx.enabled and not isinstance(exc, FailedOnSomeRank):
                    raise  # a command of one model stops with its error; ranks sharing a model's work stop together
                why = one_line(exc, limit=400)
                failures.append(ModelFailure(display, why, getattr(exc, "exit_code", 1)))
                if run_ctx.is_main:
                    print(f"error: {display}: {why} (the other models still run; the exit status will say this one "
                          "failed)", file=sys.stderr)
            finally:
                for claim in claims:
                    claim.release()
                if generator is not None:
                    generator.close()
                else:
                    release_device_memory()  # what a failed load left (its traceback is gone by now)
            running = ""
        if waiting is not None:
            # --spread models: rank 0 reports every rank's models (one table, one JSON document, one gate), once
            # all have run; a rank whose model failed no longer exits first, which made torchrun stop the others.
            shares = ctx.gather((outcomes, entries, failures), group=waiting)
            if shares is None:
                return None
            position_of = {display: index for index, display in enumerate(every_display)}
            outcomes = sorted((o for share in shares for o in share[0]), key=lambda o: position_of[o.model])
            entries = [entry for share in shares for entry in share[1]]
            failures = sorted((f for share in shares for f in share[2]), key=lambda f: position_of[f.model])
    except KeyboardInterrupt as stop:
        if not ctx.is_main:
            raise  # rank 0 reports (under --spread models: its own models, and names the others')
        elsewhere = [name for name in every_display if name not in displays] if waiting is not None else []
        if publishing and config.leaderboard_dir is not None:  # stopped in the update: saved or not, as the file says
            listed = {(entry.key, entry.run_id) for entry in entries}
            entries += [entry for entry in entries_saved(config.leaderboard_dir, publishing)
                        if (entry.key, entry.run_id) not in listed]
        raise EvaluationInterrupted(stop, Evaluation(outcomes, entries, failures), running, displays[begun:],
                                    elsewhere) from stop
    finally:
        shutdown(ctx)
    return Evaluation(outcomes, entries, failures) if run_ctx.is_main else None


class ModelFailed(EvalsuiteError):
    """The one model of a command failed (a user's error: a bad checkpoint, no room): its line and exit status, and
    ``failure`` for the ``--json`` document, which says so as a command of several models does."""

    def __init__(self, display: str, cause: EvalsuiteError):
        super().__init__(str(cause), cause.exit_code)
        self.failure = ModelFailure(display, one_line(cause, limit=400), cause.exit_code)
        self.result: Any = None  # what ``run`` reports of it (set by evalsuite.cli.run.execute for --json)


class FailedOnSomeRank(EvalsuiteError):
    """A model that some rank could not load (a bad checkpoint, no room on its GPU) or failed to run (a prompt
    longer than its context, a sandbox that would not start), known to every rank sharing its work: all of them go
    on to the next model together, as one process would."""

    def __init__(self, display: str, failed: list[tuple[int, str]], exit_code: int, what: str):
        self.exit_code = exit_code
        ranks = ", ".join(str(rank) for rank, _ in failed)
        super().__init__(f"{failed[0][1]} (rank{'s' if len(failed) > 1 else ''} {ranks} of the ranks sharing "
                         f"{display} {what})")


def _raise_if_failed_anywhere(ctx: DistContext, display: str, failure: BaseException | None, what: str) -> None:
    """Every rank sharing a model's work says whether its part failed (``failure``), and each raises
    :class:`FailedOnSomeRank` alike where any did. A collective: every rank calls it at the same point."""
    if not ctx.enabled:
        if failure is not None:
            raise failure
        return
    said = None if failure is None else (one_line(failure, limit=400), getattr(failure, "exit_code", 1))
    failed = [(rank, told) for rank, told in enumerate(ctx.everyone(said)) if told is not None]
    if failed:
        raise FailedOnSomeRank(display, [(rank, why) for rank, (why, _) in failed], failed[0][1][1], what)


def _claim_on_every_rank(claims: list[RunClaim], spec: Any, config: RunConfig, generation: Any,
                         problem_ids: dict[str, list[str]], ctx: DistContext, display: str) -> None:
    """Each task's run claimed, into ``claims`` (the caller releases them): one process at a time per run,
    refused before any weights load, on every rank alike (:func:`claims_on_every_rank`)."""
    names = {task.name: claim_name(display, task.name,
                                   claim_settings(spec, task, config, generation, problem_ids[task.name]))
             for task in config.tasks}
    takes = [partial(RunClaim.take, config.output_dir, names[task.name], ctx.rank, f"{display}/{task.name}")
             for task in config.tasks]
    claims.extend(claims_on_every_rank(takes, ctx, display, "could not claim its run"))


def claims_on_every_rank(takes: Sequence[Callable[[], RunClaim]], ctx: DistContext, display: str,
                         what: str) -> list[RunClaim]:
    """The claims ``takes`` take, once every rank sharing the model's work has said whether its own held. Why
    together: a rank refused alone (the run going on in another job) raised there alone, and under torchrun the
    whole job ended with no document and the other models never ran (red-team rounds 21 and 22); now every rank
    raises :class:`FailedOnSomeRank` (one process: the refusal itself), having released what it took, and all go on
    to the next model. A collective: every rank calls it at the same point."""
    taken: list[RunClaim] = []
    failure = None
    try:
        for take in takes:
            taken.append(take())
    except EvalsuiteError as exc:
        failure = exc
    try:
        _raise_if_failed_anywhere(ctx, display, failure, what)
    except BaseException:
        for claim in taken:
            claim.release()
        raise
    return taken


def _load_on_every_rank(spec: Any, generation: Any, ctx: DistContext, display: str) -> Any:
    """The model loaded on this rank, once every rank sharing its work has said whether it loaded it. Alone: the
    load as it is. Under data parallelism a rank whose load failed used to stop alone, leaving the others
    waiting for it in the run's first collective until torchrun stopped them all; now, where any rank failed,
    each closes what it loaded and raises :class:`FailedOnSomeRank`, and all go on to the next model."""
    from evalsuite.generation import load_generator

    if not ctx.enabled:
        return load_generator(spec, generation)
    generator, failure = None, None
    try:
        generator = load_generator(spec, generation)
    except Exception as exc:  # noqa: BLE001 - told to every rank below, then raised alike on each
        failure = exc
    try:
        _raise_if_failed_anywhere(ctx, display, failure, "could not load it")
    except FailedOnSomeRank:
        if generator is not None:
            generator.close()
        raise
    return generator


def claim_settings(spec: Any, task: Task, config: RunConfig, generation: Any, problem_ids: list[str]
                   ) -> dict[str, Any]:
    """What names a run's folder and is known before loading, for its claim: where the model loads from (a
    local folder by its real path: ./ckpt and /abs/ckpt are one run), the problems, sampling, prompt and dtype.
    Never the rank's device: a torchrun rank and a single process on one run must collide."""
    location = os.path.realpath(spec.location) if spec.source == "local" else spec.location
    server = generation.openai.base_url if generation.backend == "openai" else None  # two servers: two runs
    return {"model": location, "revision": spec.revision, "backend": generation.backend, "server": server,
            "dtype": generation.loading.dtype, "problems": problem_ids,
            "sampling": config.sampling.to_dict(), "prompt": prompt_key(config.prompt, task.name)}


def workload(config: RunConfig) -> Workload:
    """The most this command asks of each model (resumed samples make it less)."""
    problems = sum(len(select_problems(task, config.limit)) for task in config.tasks)
    return Workload(samples=problems * config.sampling.n, max_new_tokens=config.sampling.max_new_tokens)


def _finished_runs(config: RunConfig, display: str, keys: Mapping[str, str | None],
                   revision: str | None = None) -> dict[str, RunRecord]:
    """Task name -> record of a finished generation with the same request key, made with the checkpoint files
    found now (``revision``; see :mod:`evalsuite.runs.resume`)."""
    found = {}
    for task in config.tasks:
        key = keys[task.name]
        if key is None:
            continue
        ids = {p.task_id for p in select_problems(task, config.limit)}
        record = finished_record(config.output_dir, display, task.name, key, config.sampling.n, ids, revision)
        if record is not None:
            found[task.name] = record
    return found


def resolve_models(models: Sequence[str], generation: GenerationOptions, names: Mapping[str, str]) -> list[ModelSpec]:
    """Every model of a command resolved, named and found before any of them loads (the CLI asks this before it
    makes a folder, :func:`run_evaluation` again): ``--revision`` on a local folder, GGUF file or the reference
    model, two models under one name, or a hub id neither cached nor reachable fail here in one line."""
    from evalsuite.generation import check_available
    from evalsuite.generation.backends import backend_for
    from evalsuite.models.registry import resolve_model

    # the backend each model runs on (--base-url alone means a server): --revision on a served model is refused
    specs = [resolve_model(name, backend=backend_for(name, generation), revision=generation.loading.revision)
             for name in models]
    check_display_names(models, specs, names)
    for spec in specs:
        check_available(spec, generation)
    return specs


def check_display_names(models: Sequence[str], specs: Sequence[ModelSpec], names: Mapping[str, str]) -> None:
    """Every model of a command under its own name: results, run folders and the leaderboard are keyed by it, so
    two models under one name (one checkpoint given twice as ``./ckpt`` and ``/abs/ckpt``, two folders both called
    ``gpt2``, ``--name a,a``) are refused before any loads; the second would replace the first's entry."""
    seen: dict[str, tuple[str, ModelSpec]] = {}
    for name, spec in zip(models, specs):
        display = display_name(name, spec, names)
        if display in seen:
            first, first_spec = seen[display]
            if first_spec.location == spec.location and not names:
                raise EvalsuiteError(f"{first} and {name} are one model, given twice in --models; give it once")
            raise EvalsuiteError(f"{first} and {name} would both be named {display!r} in the results and on the "
                                 "leaderboard (the second replacing the first): give each its own with --name")
        seen[display] = (name, spec)


def display_name(name: str, spec: Any, names: Mapping[str, str]) -> str:
    """What every view calls the model: ``--name`` when given; a local checkpoint's folder (or GGUF file)
    name, so ``./ckpt`` and ``/abs/ckpt`` are one model; otherwise the name as given (alias, hub id), with
    ``@REVISION`` when ``--revision`` was given (another revision is another leaderboard row)."""
    if names.get(name):
        return names[name]
    if getattr(spec, "revision", None):
        return f"{name}@{spec.revision}"
    if getattr(spec, "source", None) == "local":
        location = Path(spec.location)
        return location.stem if location.suffix == ".gguf" else location.name
    return name


def print_results_table(outcomes: Sequence[RunOutcome], ks: Sequence[int], stream=None,
                        failures: Sequence[ModelFailure] = ()) -> None:
    from evalsuite.reporting.labels import estimate_text
    from evalsuite.reporting.terminal import Table

    stream = stream or sys.stdout
    # EvalPlus-style runs (--preset evalplus): pass@k is the plus figure; the base one gets columns of its own
    with_base = any("base" in outcome.score.sets for outcome in outcomes)
    header = ["model", "task", "n"] + [f"pass@{k}" for k in ks] + ([f"base pass@{k}" for k in ks] if with_base else [])
    header.append("run")
    rows = []
    for outcome in outcomes:
        badges = outcome.record.badges()
        label = f"{outcome.model} ({', '.join(badges)})" if badges else outcome.model
        cells = [label, outcome.task, str(outcome.record.sampling.n)]
        for k in ks:
            value = outcome.score.pass_at.get(k)
            cells.append(estimate_text(value) if value else "n/a")
        if with_base:
            base = outcome.score.sets.get("base")
            for k in ks:
                value = base.pass_at.get(k) if base else None
                cells.append(estimate_text(value) if value else "-")
        cells.append(str(outcome.run_dir.path))
        rows.append(cells)
    for failure in failures:
        rows.append([f"{failure.model} (FAILED)", "-", "-"] + ["failed"] * len(ks) * (2 if with_base else 1)
                    + [failure.error[:120]])
    print(Table(rows, header).render(), file=stream)
