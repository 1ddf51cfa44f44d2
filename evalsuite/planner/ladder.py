"""The loading ladder: the choice among the registered strategies (:mod:`evalsuite.planner.strategies`).

Ladder order: one GPU in half precision -> several GPUs (accelerate device map, blocks never split) ->
bitsandbytes 8-bit -> 4-bit nf4 -> CPU offload (accelerate) / DeepSpeed ZeRO-Inference -> CPU only.
Every rung is sized at the largest batch whose KV cache fits next to its weights; of the rungs that fit,
the first in ladder order whose estimated time per generated token is within 20% of the fastest wins.
So the order decides between near-equals (numerics first), and measured speed decides the rest -- which
of the two offloaders, or nf4 over int8 (3.4x vs 1.6x slower than bf16 on the reference GPU).
DeepSpeed-Inference (kernel injection) is never chosen on its own: it is a fast path the user selects.

Speed estimates come from :class:`~evalsuite.planner.speed.SpeedModel`, whose constants were measured on the
reference GPU (see docs/benchmarks.md, "Loading strategies"); they rank strategies and give honest orders of
magnitude, not promises.
"""

from __future__ import annotations

from evalsuite.errors import EvalsuiteError
from evalsuite.planner.capacity import format_bytes
from evalsuite.planner.plan import Plan, PlanRequest, Rejection
from evalsuite.planner.strategies import LoadingStrategy, NoFit, Sizing, Unavailable, ladder, strategy_named


def _batches(requested: int) -> list[int]:
    batches = [max(requested, 1)]
    while batches[-1] > 1:
        batches.append(batches[-1] // 2)
    return batches


TIE_MARGIN = 1.2  # a rung higher in the ladder (better numerics) wins unless a lower one is >20% faster
# How much faster the sampling engine decodes than transformers' generate at the batch the planner sizes, as
# the ladder ranks rungs (the estimates are plain generate's): its paged cache holds more rows than a padded
# batch, and its steps are CUDA graphs. The smallest measured on the reference GPU (docs/benchmarks.md): 2.3x
# (SmolLM2 float32 greedy; GPT-J under a 16 GiB cap 5.6x, realistic sampling 18-29x). Without it BLOOM-7B1
# under 16 GiB was planned nf4 (plain generate, 784 tok/s) over whole-GPU bf16 on the engine (1,172).
ENGINE_SPEEDUP = 2.0


def ranked_ms_per_token(plan: Plan) -> float:
    """The time per token the ladder compares rungs by: the estimate, less the engine's speed-up where it runs."""
    return plan.est_ms_per_token / (ENGINE_SPEEDUP if plan.sampling_engine else 1.0)


def _fit_largest_batch(request: PlanRequest, strategy: LoadingStrategy) -> tuple[Plan | None, str]:
    """The rung at the largest batch <= the requested one that fits, or (None, why it fails at batch 1)."""
    first_reason = last_reason = ""
    for batch in _batches(request.batch_size):
        try:
            plan = strategy.fit(Sizing(request, batch))
        except Unavailable as why:
            return None, str(why)
        except NoFit as why:
            first_reason, last_reason = first_reason or str(why), str(why)
            continue
        if strategy.offloads and plan.offload_to is None:
            return None, "nothing to offload: the weights fit on the GPU (force it with --strategy to compare)"
        if batch < request.batch_size:
            plan.notes.append(f"batch lowered from {request.batch_size} to {batch} so the KV cache fits "
                              f"(at batch {request.batch_size}: {first_reason})")
        return plan, ""
    return None, last_reason + " (even at batch 1)"


def _position(name: str, rungs: list[LoadingStrategy]) -> int:
    """Where ``name`` stands in the ladder ``rungs`` (after every rung: a strategy only forced)."""
    names = [rung.name for rung in rungs]
    return names.index(name) if name in names else len(names)


def choose_plan(request: PlanRequest, strategy: str | None = None) -> Plan:
    """The plan for ``request``: the forced ``strategy`` (marked ``fits=False`` if it does not fit), or the
    ladder's choice.

    Every rung is sized at the largest batch that fits (the KV cache shrinks with the batch). Among the
    rungs that fit, the first in ladder order whose estimated time per generated token is within 20% of
    the fastest wins: the ladder's order prefers numerics (bf16 over 8-bit over 4-bit, GPU over
    offload), the estimate keeps that preference from costing real speed. CPU-only competes only when
    every GPU rung would offload (``keeps_weights_on_gpu``). When nothing fits even at
    batch 1, EvalsuiteError gives every rung's numbers, before any download.
    """
    if strategy is not None:
        return _forced(request, strategy)
    rungs = ladder()
    candidates: list[Plan] = []
    rejected: list[Rejection] = []
    for rung in rungs:
        plan, why = _fit_largest_batch(request, rung)
        if plan is None:
            rejected.append(Rejection(rung.name, why))
        else:
            candidates.append(plan)
    if not candidates:
        half = request.shape.weight_bytes("bfloat16")
        detail = "; ".join(f"{r.strategy}: {r.reason}" for r in rejected)
        raise EvalsuiteError(
            f"{request.model} cannot run within {request.capacity.describe()} "
            f"({request.shape.num_params / 1e9:.1f}B parameters: {format_bytes(half)} in half precision, "
            f"{format_bytes(request.shape.weight_bytes('nf4'))} in nf4; runtime budget at batch 1 "
            f"{format_bytes(Sizing(request, 1).budget.total)}): {detail}")
    on_gpu = [p for p in candidates if strategy_named(p.strategy).keeps_weights_on_gpu]
    cpu_only = [p for p in candidates if not strategy_named(p.strategy).needs_gpu]
    if on_gpu and cpu_only:
        candidates = [p for p in candidates if p not in cpu_only]
        rejected.extend(Rejection(p.strategy, "the weights fit on the GPU: CPU-only decoding competes only with "
                                              f"offloading (force it with --strategy {p.strategy})")
                        for p in cpu_only)
    fastest = min(ranked_ms_per_token(p) for p in candidates)
    chosen = next(p for p in candidates if ranked_ms_per_token(p) <= TIE_MARGIN * fastest)
    for plan in candidates:
        if plan is chosen:
            continue
        if ranked_ms_per_token(plan) > ranked_ms_per_token(chosen):
            verdict = "slower"
        elif _position(plan.strategy, rungs) < _position(chosen.strategy, rungs):
            verdict = f"more than 20% slower than {chosen.strategy}"
        else:
            verdict = f"not 20% faster, and the ladder prefers {chosen.strategy}"
        rejected.append(Rejection(plan.strategy, f"fits (batch {plan.budget.batch_size}, "
                                                 f"~{_ranked_text(plan)} ms/token vs "
                                                 f"~{_ranked_text(chosen)}): {verdict}"))
    chosen.rejected = sorted(rejected, key=lambda r: _position(r.strategy, rungs))
    return chosen


def _ranked_text(plan: Plan) -> str:
    return f"{ranked_ms_per_token(plan):.3g}" + (" on the sampling engine" if plan.sampling_engine else "")


def _forced(request: PlanRequest, name: str) -> Plan:
    strategy = strategy_named(name)
    plan = None
    reason = ""
    for batch in _batches(request.batch_size):
        try:
            plan = strategy.fit(Sizing(request, batch))
        except NoFit as why:
            reason = reason or str(why)
            continue
        if batch < request.batch_size:
            plan.notes.append(f"batch lowered from {request.batch_size} to {batch} so that the KV cache fits")
        break
    if plan is None:
        plan = _unfit_plan(Sizing(request), strategy, reason)
    plan.forced = True
    plan.notes.insert(0, f"strategy forced with --strategy {name}" +
                      ("" if plan.fits else f"; it does not fit: {reason}"))
    return plan


def _unfit_plan(sizing: Sizing, strategy: LoadingStrategy, reason: str) -> Plan:
    dtype = strategy.unfit_dtype(sizing.request.gpu_dtype)
    weight_bytes = sizing.shape.weight_bytes(dtype)
    plan = sizing.plan(strategy, dtype, weight_bytes, {"-": "does not fit"}, float("inf"))
    plan.fits = False
    plan.rejected = [Rejection(strategy.name, reason)]
    return plan


def step_down(plan: Plan, request: PlanRequest, why: str) -> Plan:
    """The next rung below ``plan.strategy`` that fits: used when loading runs out of memory anyway."""
    sizing = Sizing(request, plan.budget.batch_size)
    rungs = ladder()
    start = _position(plan.strategy, rungs) + 1
    rejected = list(plan.rejected) + [Rejection(plan.strategy, why)]
    for rung in rungs[start:]:
        try:
            new = rung.fit(sizing)
        except NoFit as reason:
            rejected.append(Rejection(rung.name, str(reason)))
            continue
        new.rejected = rejected
        new.notes = list(plan.notes) + [f"stepped down from {plan.strategy}: {why}"]
        return new
    raise EvalsuiteError(f"{plan.model}: {plan.strategy} ran out of memory while loading ({why}) and no lower "
                         f"rung fits: " + "; ".join(f"{r.strategy}: {r.reason}" for r in rejected))
