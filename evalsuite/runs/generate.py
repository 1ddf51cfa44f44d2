"""The generation stage of a run: ask the backend for every completion not yet saved, and read them back.

Why apart from the pipeline: this is the one place that talks to a :class:`Generator` and appends to
``completions*.jsonl``; resuming an interrupted run is "generate what is missing", so it lives here too.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import Generator
from evalsuite.jsonl import JsonlAppender, atomic_write_jsonl, read_jsonl
from evalsuite.progress import TokenProgress, progress_bar
from evalsuite.protocol.asking import Asking
from evalsuite.records import Completion, GenerationRequest, SamplingParams
from evalsuite.runs.invocations import Invocation, made_by
from evalsuite.runs.rundir import SEAL_FIELD, RunDir
from evalsuite.runs.stops import stops_held
from evalsuite.tasks.task import Problem, Task

# A completions row's field: the model's output cut at the stop sequences, before the task's postprocessing (or an
# instruct answer's extraction) made ``completion`` of it; kept so that scoring makes ``completion`` again
STOPPED_TEXT = "stopped_text"


def generate_missing(generator: Generator, task: Task, problems: Sequence[Problem], stops: Sequence[str],
                     sampling: SamplingParams, run_dir: RunDir, label: str, show_progress: bool,
                     valid_ids: set[str], out_name: str = "completions.jsonl", asking: Asking = Asking(),
                     invocation_id: str | None = None, tally: Invocation | None = None) -> tuple[int, float]:
    """Generate every completion of ``problems`` not yet saved, appending each to ``out_name`` as it arrives.

    ``valid_ids`` are all of the run's problem ids (other ranks' shards included), for validating saved files.
    Every row names the ``invocation_id`` that made it. Returns (completions generated now, tokens generated now);
    ``tally`` counts them as they arrive, so an interrupted invocation can still say what it made.
    """
    # Only this shard's rows count as earlier work: under data parallelism the other ranks append to their own
    # files meanwhile, and on a fresh folder their first rows are not something this rank resumed.
    mine = {problem.task_id for problem in problems}
    done = {key: row for key, row in run_dir.existing_completions(valid_ids, sampling.n).items() if key[0] in mine}
    requests = []
    for problem in problems:
        missing = tuple(i for i in range(sampling.n) if (problem.task_id, i) not in done)
        if missing:
            requests.append(GenerationRequest(task_id=problem.task_id, prompt=asking.prompt_for(task, problem),
                                              sample_indices=missing, stop_sequences=tuple(stops),
                                              canonical_solution=problem.canonical_solution,
                                              prompt_style=asking.style))
    total = sum(len(r.sample_indices) for r in requests)
    if total == 0:
        return 0, 0.0
    by_id = {p.task_id: p for p in problems}
    generated, tokens = 0, 0
    with JsonlAppender(run_dir.path / out_name) as out, \
            progress_bar(total=total, desc=f"generate {label}", unit="completion", enabled=show_progress) as bar:
        if done and show_progress:  # not under --quiet, nor on a worker rank (rank 0 speaks)
            # tqdm's write() prints on stdout unless told (and whether or not the bar is shown): the table's stream
            bar.write(f"resuming {run_dir.path}: {len(done)} completions kept, {total} to generate", file=sys.stderr)
        progress = TokenProgress(bar, total, sampling.max_new_tokens, generator.expected_tokens_per_s())
        generator.token_listener = progress.on_tokens
        stream = generator.generate(requests, sampling)

        def save(completion: Completion) -> None:
            nonlocal generated, tokens
            expected = (completion.task_id, completion.sample_index)
            if completion.task_id not in by_id or expected in done:
                raise EvalsuiteError(f"backend returned an unexpected completion {expected}")
            done[expected] = {}
            row = completion.to_json()
            raw = completion.text if completion.raw_text is None else completion.raw_text
            row[STOPPED_TEXT] = completion.text  # what completion is made from, again at each scoring
            row.update(asking.completion_row(task, by_id[completion.task_id], completion.text, raw))
            if invocation_id is not None:
                row["invocation_id"] = invocation_id
            with stops_held():  # the row saved and counted together
                out.write(run_dir.sealed(row))
                generated += 1
                tokens += completion.num_tokens
                progress.on_completion(completion.num_tokens)

        try:
            try:
                for completion in stream:
                    save(completion)
            except KeyboardInterrupt as stop:  # it came while a row was being saved: the backend hands over the rest
                for completion in finished_before(stream, stop):
                    save(completion)
                raise
        finally:  # also on Ctrl-C: the record says what this invocation made
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # a backend left mid-way stops now (its decoding thread included), not when collected
            generator.token_listener = None
            if tally is not None:
                if sys.exc_info()[0] is not None and invocation_id is not None:
                    # Cut off (Ctrl-C may land between a row's write and its count): the rows on disk say
                    rows = (row for _, row in read_jsonl(run_dir.path / out_name, tolerate_torn_tail=True))
                    generated, tokens = made_by(rows, [invocation_id])[invocation_id]
                tally.completions_generated, tally.tokens_generated = generated, tokens
                tally.warning = progress.slow_warning
    if generated != total:
        raise EvalsuiteError(f"backend produced {generated} of {total} completions")
    return generated, float(tokens)


def finished_before(stream: Iterator[Completion], stop: KeyboardInterrupt) -> Iterator[Completion]:
    """The completions a backend had finished when ``stop`` came while the caller was busy: the stop is thrown in
    where the backend waits, and one that holds finished rows (a batch cut short) yields them before re-raising."""
    throw = getattr(stream, "throw", None)
    if throw is None:
        return
    try:
        completion = throw(stop)
        while True:
            yield completion
            completion = next(stream)
    except (KeyboardInterrupt, StopIteration):
        return


def load_completions(run_dir: RunDir, problems: Sequence[Problem], n: int, valid_ids: set[str],
                     task: Task, asking: Asking) -> list[dict[str, Any]]:
    """The completions of ``problems``, in problem order then completion_id (the order results are written in),
    each :func:`remade` by the task's code as it is now."""
    done = run_dir.existing_completions(valid_ids, n)
    ordered = []
    for problem in problems:
        for index in range(n):
            row = done.get((problem.task_id, index))
            if row is None:
                raise EvalsuiteError(f"{run_dir.completions}: completion {index} of {problem.task_id} is missing")
            ordered.append(remade(row, problem, task, asking))
    return ordered


def remade(row: dict[str, Any], problem: Problem, task: Task, asking: Asking) -> dict[str, Any]:
    """``row`` with its ``completion`` (what the sandbox runs) made again from the model's output as it was cut at
    the stops (:data:`STOPPED_TEXT`; an instruct answer from its whole output) by the task's postprocessing or an
    instruct answer's extraction as they are now: rows kept from an earlier invocation whose code has changed
    since (a plugin's ``postprocess`` or its helpers, a spec's entry point) are scored as the new rows are, never
    each by its own code (red-team rounds 18 and 19). A base row saved before the field was kept is as saved."""
    stopped, raw = row.get(STOPPED_TEXT), row.get("raw_completion")
    if not isinstance(raw, str):
        return row
    if isinstance(stopped, str):
        return {**row, **asking.completion_row(task, problem, stopped, raw)}
    if asking.style == "instruct":  # extracted from the whole output: the cut text is not needed
        return {**row, **asking.completion_row(task, problem, raw, raw)}
    return row


def keep_remade(run_dir: RunDir, saved: Mapping[tuple[str, int], dict[str, Any]],
                rows: Mapping[tuple[str, int], dict[str, Any]]) -> int:
    """Write the completions files again where a row's ``completion`` was :func:`remade` otherwise than ``saved``
    (the rows as read), so that completions.jsonl, the run page and ``evaluate`` of that file say what the score
    ran (each such row sealed again, each file holding one replaced whole); call with every rank's rows, once
    generation is over everywhere. The files are read again only where a row changed. Returns how many did."""
    changed: dict[tuple[Any, Any], dict[str, Any]] = {
        key: row for key, row in rows.items() if row.get("completion") != saved[key].get("completion")}
    if not changed:
        return 0
    for path in run_dir.completion_files():
        kept = [row for _, row in read_jsonl(path, tolerate_torn_tail=True)]
        now = []
        for row in kept:
            new = changed.get((row.get("task_id"), row.get("completion_id")))
            now.append(row if new is None else run_dir.sealed({k: v for k, v in new.items() if k != SEAL_FIELD}))
        if now != kept:
            atomic_write_jsonl(path, now)
    return len(changed)
