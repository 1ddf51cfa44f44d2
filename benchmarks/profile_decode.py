"""Where one decode step of the engine spends its time (issue 15): a per-kernel profile on the GPU.

Runs the GPT-J-6B realistic sampling workload of bench_generate.py until the decode batch is full and the
rows are spread over their samples, then, at that step, times (CUDA graph replays, median of many):
the whole step, the model part alone (logits) and the sampling part alone; profiles the step's kernels
(torch.profiler over eager steps and over graph replays) into a per-kernel table; and does the same at
batch 1. Also times the weight matrix products alone, separate and fused, at batch 1 and at the large
batch, so each fusion's gain can be predicted before it is written.

    python benchmarks/profile_decode.py --out runs/profile            # GPU, ~3 minutes
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuda_graphs import graph_of, replay_times_ms  # noqa: E402
from bench_generate import (SHAPES, build_model, load_prompt_tokens, one_shape_arguments,  # noqa: E402
                            prompt_subset, realistic_samples)
from evalsuite.engine import Engine, EngineOptions  # noqa: E402
from evalsuite.engine.runner import DecodeRunner  # noqa: E402
from evalsuite.engine.sampling import choose_tokens, filter_logits, uniform_noise  # noqa: E402
from evalsuite.records import GenerationRequest, SamplingParams  # noqa: E402


class _Stop(Exception):
    pass


def time_replays(graph, reps: int, before=None) -> dict:
    times = replay_times_ms(graph, reps, before)
    return {"median_ms": round(statistics.median(times), 4), "min_ms": round(min(times), 4),
            "max_ms": round(max(times), 4), "reps": reps}


def kernel_table(prof, steps: int) -> list[dict]:
    """Device kernels grouped by name: total ms per step, launches per step."""
    rows: dict[str, dict] = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        entry = rows.setdefault(event.name, {"name": event.name, "us": 0.0, "count": 0})
        entry["us"] += event.time_range.elapsed_us()
        entry["count"] += 1
    total = sum(r["us"] for r in rows.values()) or 1.0
    out = []
    for r in sorted(rows.values(), key=lambda r: -r["us"]):
        out.append({"name": r["name"][:160], "ms_per_step": round(r["us"] / 1000 / steps, 4),
                    "share": round(r["us"] / total, 4), "launches_per_step": r["count"] / steps,
                    "us_per_launch": round(r["us"] / r["count"], 2)})
    return out


def op_table(prof, steps: int, limit: int = 60) -> list[dict]:
    out = []
    for avg in sorted(prof.key_averages(), key=lambda a: -a.self_device_time_total)[:limit]:
        if avg.self_device_time_total <= 0:
            continue
        out.append({"op": avg.key[:120], "self_device_ms_per_step": round(avg.self_device_time_total / 1000 / steps, 4),
                    "calls_per_step": avg.count / steps})
    return out


def probe(runner: DecodeRunner, batch: int, reps: int) -> dict:
    """Everything measured at one decode step of a running engine; the rows' state is restored after."""
    st = runner.state
    snap = [column.clone() for column in st.columns()]

    def restore():
        for column, saved in zip(st.columns(), snap):
            column.copy_(saved)

    torch.cuda.synchronize()
    gen_len = st.gen_len[:batch].float()
    p_len = st.p_len[:batch].float()
    spec = runner.spec
    layers = runner.adapter.num_layers
    elem = runner.cache.gen.element_size()
    per_token_layer = 2 * spec.num_kv_heads * spec.head_dim * elem
    active = int((p_len > 0).sum())
    result = {"batch": batch, "active_rows": active, "mean_gen_len": round(float(gen_len.mean()), 1),
              "mean_prompt_len": round(float(p_len.mean()), 1),
              "own_kv_gb_per_step": round(float((gen_len + 1).sum()) * per_token_layer * layers / 1e9, 3),
              "prompt_kv_gb_per_step_if_per_row": round(float(p_len.sum()) * per_token_layer * layers / 1e9, 3),
              "shared_prefix": runner.shared_prefix}
    graph = runner._graphs.get(batch)
    if graph is not None:
        result["step_graph"] = time_replays(graph, reps, restore)
        restore()

    logits_out = torch.empty(batch, runner.adapter.lm_head.weight.shape[0], dtype=runner.cache.gen.dtype,
                             device=runner.device)
    tok_out = torch.empty(batch, dtype=torch.int64, device=runner.device)

    def decode_only():
        gl = st.gen_len[:batch]
        g_len = gl + 1
        pos = st.p_len[:batch] + gl
        meta = (st.p_slot[:batch], st.p_len[:batch], st.g_slot[:batch], gl, g_len, pos)
        logits_out.copy_(runner.adapter.decode(st.tok[:batch], pos, runner._attend(meta)))

    steps_t = (st.gen_len[:batch] + 1).long()

    def sample_only():
        tok_out.copy_(choose_tokens(logits_out, st.seed[:batch], steps_t, runner.params))

    filtered = torch.empty(batch, logits_out.shape[1], dtype=torch.float32, device=runner.device)

    def filter_only():
        filtered.copy_(filter_logits(logits_out, runner.params))

    def noise_only():
        filtered.copy_(uniform_noise(st.seed[:batch], steps_t, logits_out.shape[1]))

    for key, fn in (("decode_graph", decode_only), ("sampling_graph", sample_only),
                    ("sampling_filter_graph", filter_only), ("sampling_noise_graph", noise_only)):
        try:
            g = graph_of(fn)
            result[key] = time_replays(g, reps, restore if key == "decode_graph" else None)
            del g
        except Exception as exc:  # keep the rest of the probe
            result[key] = f"{type(exc).__name__}: {exc}"[:300]
        restore()

    from torch.profiler import ProfilerActivity, profile

    steps = 3
    try:
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                runner._step(batch)
            torch.cuda.synchronize()
        result["eager_kernels"] = kernel_table(prof, steps)
        result["eager_ops"] = op_table(prof, steps)
        result["eager_kernel_ms_per_step"] = round(sum(k["ms_per_step"] for k in result["eager_kernels"]), 3)
        result["eager_launches_per_step"] = sum(k["launches_per_step"] for k in result["eager_kernels"])
    except Exception as exc:
        result["eager_profile_error"] = f"{type(exc).__name__}: {exc}"[:300]
    restore()
    if graph is not None:
        try:
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(steps):
                    graph.replay()
                torch.cuda.synchronize()
            result["graph_kernels"] = kernel_table(prof, steps)
            result["graph_kernel_ms_per_step"] = round(sum(k["ms_per_step"] for k in result["graph_kernels"]), 3)
            result["graph_launches_per_step"] = sum(k["launches_per_step"] for k in result["graph_kernels"])
        except Exception as exc:
            result["graph_profile_error"] = f"{type(exc).__name__}: {exc}"[:300]
        restore()
    torch.cuda.synchronize()
    return result


def run_until(engine, requests, prompt_ids, params, lengths, at_step: int, min_batch: int, reps: int) -> dict:
    """Run the workload; at the first step >= at_step with a bucket >= min_batch, probe and stop."""
    found: dict = {}
    original = DecodeRunner.step
    count = [0]

    def step(self, batch):
        count[0] += 1
        if count[0] >= at_step and batch >= min_batch and not found:
            found.update(probe(self, batch, reps))
            found["step_index"] = count[0]
            raise _Stop
        return original(self, batch)

    DecodeRunner.step = step
    try:
        forced = (lambda task, i: lengths[(task, i)]) if lengths else None
        for _ in engine.generate(requests, params, prompt_ids=prompt_ids, forced_lengths=forced,
                                 ignore_eos=lengths is None):
            pass
    except _Stop:
        pass
    finally:
        DecodeRunner.step = original
    return found


def gemm_bench(hidden: int, inner: int, vocab: int, dtype, reps: int) -> dict:
    """Weight matrix products of one GPT-J-shaped layer, separate and fused, at batch 1 and large batches.
    Several weight copies in rotation so that no product is served from L2."""
    out = {}
    copies = 3
    shapes = {  # name: list of (in, out, bias)
        "q,k,v separate + fc_in": [(hidden, hidden, False)] * 3 + [(hidden, inner, True)],
        "qkv+fc_in fused": [(hidden, 3 * hidden + inner, True)],
        "qkv fused": [(hidden, 3 * hidden, False)],
        "out_proj + fc_out separate": [(hidden, hidden, False), (inner, hidden, True)],
        "out_proj+fc_out fused": [(hidden + inner, hidden, True)],
        "lm_head": [(hidden, vocab, True)],
    }
    for m in (1, 256, 384, 512):
        for name, mats in shapes.items():
            weights = [[(torch.randn(o, i, device="cuda", dtype=dtype) * 0.02,
                         torch.randn(o, device="cuda", dtype=dtype) if b else None) for (i, o, b) in mats]
                       for _ in range(copies)]
            xs = {i: torch.randn(m, i, device="cuda", dtype=dtype) for (i, _, _) in mats}

            def fn():
                for c in range(copies):
                    for (i, o, b), (w, bias) in zip(mats, weights[c]):
                        torch.nn.functional.linear(xs[i], w, bias)

            g = graph_of(fn)
            t = time_replays(g, reps)
            byte_count = sum((i * o + (o if b else 0)) * 2 for (i, o, b) in mats)
            ms = t["median_ms"] / copies
            out[f"m={m} {name}"] = {"ms": round(ms, 4), "weight_mb": round(byte_count / 1e6, 1),
                                    "tb_per_s": round(byte_count / (ms / 1000) / 1e12, 3),
                                    "tflops": round(sum(2 * m * i * o for (i, o, _) in mats) / (ms / 1000) / 1e12, 1)}
            del g, weights, xs
            torch.cuda.empty_cache()
    return out


def gelu_bench(inner: int, dtype, reps: int) -> dict:
    from transformers.activations import NewGELUActivation

    act = NewGELUActivation()
    out = {}
    for m in (1, 256):
        x = torch.randn(m, inner, device="cuda", dtype=dtype)
        g = graph_of(lambda: act(x))
        out[f"m={m} gelu_new eager"] = time_replays(g, reps)
    return out


def main(argv=None) -> int:
    ap = one_shape_arguments(__doc__.split("\n")[0], "runs/profile")
    ap.add_argument("--at-step", type=int, default=500)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16")
    ap.add_argument("--min-batch", type=int, default=192, help="profile the first step at or past --at-step this wide")
    ap.add_argument("--greedy", action="store_true", help="the large batch: one greedy sample of each of --prompts "
                                                          "prompts (lengths as the realistic workload's)")
    ap.add_argument("--skip", default="", help="comma-separated: big,bs1,gemm")
    args = ap.parse_args(argv)
    skip = set(args.skip.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dtype = getattr(torch, args.dtype)
    result: dict = {"model": args.model, "torch": torch.__version__, "device": torch.cuda.get_device_name()}

    def dump():
        (out / f"profile_{args.model}.json").write_text(json.dumps(result, indent=1))

    vocab_hint = SHAPES[args.model][1]["vocab_size"]
    prompt_tokens, eos, _ = load_prompt_tokens(vocab_hint, False)
    tasks = prompt_subset(prompt_tokens, args.prompts)  # bench_generate.py's (lexicographic order before 2026-11-28)
    t0 = time.perf_counter()
    model = build_model(args.model, eos, "cuda", dtype, False)
    result["build_s"] = round(time.perf_counter() - t0, 1)
    engine = Engine(model, decode_tokens=json.dumps, eos_token_ids=[eos], options=EngineOptions())
    if args.greedy:
        args.n = 1
    params = (SamplingParams(n=1, temperature=0.0, max_new_tokens=512, seed=0) if args.greedy
              else SamplingParams(n=args.n, temperature=0.8, top_p=0.95, max_new_tokens=512, seed=0))
    if "big" not in skip:
        try:
            requests, lengths = realistic_samples(tasks, args.n)
            result["large_batch"] = run_until(engine, requests, [prompt_tokens[t] for t in tasks], params, lengths,
                                              args.at_step, args.min_batch, args.reps)
        except Exception:
            result["large_batch_error"] = traceback.format_exc()[-2000:]
        dump()
        print("large batch done", flush=True)
    if "bs1" not in skip:
        try:
            request = [GenerationRequest(task_id="bs1", prompt="", sample_indices=(0,))]
            result["batch_1"] = run_until(engine, request, [prompt_tokens[tasks[0]]],
                                          SamplingParams(max_new_tokens=80), None, 40, 1, args.reps * 3)
        except Exception:
            result["batch_1_error"] = traceback.format_exc()[-2000:]
        dump()
        print("bs1 done", flush=True)
    cfg = model.config
    hidden, vocab = cfg.hidden_size, cfg.vocab_size
    inner = getattr(cfg, "n_inner", None) or 4 * hidden
    engine = model = None
    torch.cuda.empty_cache()
    if "gemm" not in skip:
        try:
            result["gemm"] = gemm_bench(hidden, inner, vocab, dtype, args.reps)
            result["gelu"] = gelu_bench(inner, dtype, args.reps)
        except Exception:
            result["gemm_error"] = traceback.format_exc()[-2000:]
        dump()
    summary = {k: v for k, v in result.items() if k not in ("large_batch", "batch_1")}
    for key in ("large_batch", "batch_1"):
        part = result.get(key) or {}
        summary[key] = {k: v for k, v in part.items() if not isinstance(v, list)}
        summary[key]["top_graph_kernels"] = (part.get("graph_kernels") or part.get("eager_kernels") or [])[:25]
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
