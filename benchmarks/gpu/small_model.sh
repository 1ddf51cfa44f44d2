#!/usr/bin/env bash
# The real SmolLM2-135M-Instruct GGUF on one GPU, as `evalsuite run` runs it: where the engine's time goes.
# Stage the GGUF first (`bash benchmarks/gpu/acceptance.sh stage`, over two calls: see acceptance.sh), then:
#   float32 greedy over HumanEval's 164 prompts on the engine, twice (the first compiles the Triton kernels;
#   the second finds them cached, as every later run on a machine does), the second again under cProfile;
#   the same on plain transformers `generate`; n=20 T=0.8 on 20 problems on both (the engine twice, as greedy).
# Per run: generate s, tok/s and the engine's own budget (set-up, prompts' prefill, waiting on the device,
# the whole loop). ~5 minutes on an H100. JSON and profiles in $OUT.
cd "$(dirname "$0")/../.." || exit 1
export SKIP_INSTALL=${SKIP_INSTALL:-1} BUILD_MODEL=0
source benchmarks/gpu/common.sh
export PYTHONPATH=/tmp/site:$PWD
GGUF=${GGUF:-/tmp/models/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -f "$GGUF" ] || { echo "no GGUF at $GGUF: stage it first (acceptance.sh stage)"; exit 2; }
GREEDY=(--device cuda --dtype float32 --temperature 0)
SAMPLED=(--device cuda --n 20 --temperature 0.8 --limit 20 --k 1,10)
run_case() {  # name, then evalsuite run flags; PROFILE=1: under cProfile
  local name=$1; shift
  rm -rf "/tmp/small/$name"
  local prefix=("$PY")
  [ "${PROFILE:-0}" = 1 ] && prefix=("$PY" -m cProfile -o "$OUT/$name.prof")
  "${prefix[@]}" -m evalsuite run --models "$GGUF" --output "/tmp/small/$name" --no-leaderboard --quiet \
    $SANDBOX_FLAG "$@" > "$OUT/$name.log" 2>&1 || { echo "$name: exit $?"; tail -5 "$OUT/$name.log"; }
}
run_case greedy_engine_cold "${GREEDY[@]}"
run_case greedy_engine "${GREEDY[@]}"
[ "${SKIP_PROFILE:-0}" = 1 ] || PROFILE=1 run_case greedy_engine_profiled "${GREEDY[@]}"
run_case greedy_plain "${GREEDY[@]}" --engine transformers
run_case sampled_engine_cold "${SAMPLED[@]}"  # the first bfloat16 run compiles that dtype's kernels
run_case sampled_engine "${SAMPLED[@]}"
[ "${SKIP_PLAIN_SAMPLED:-0}" = 1 ] || run_case sampled_plain "${SAMPLED[@]}" --engine transformers
$PY - <<'PY' | tee "$OUT/small_model.txt"
import json, os, pathlib, pstats
out, rows = pathlib.Path(os.environ["OUT"]), {}
for run in sorted(pathlib.Path("/tmp/small").glob("*/*/record.json")):
    record = json.loads(run.read_text())
    engine = record["model"].get("engine")
    name = run.parent.parent.name
    rows[name] = {"generate_s": record["timings_s"]["generate"], "tokens_per_s": record["generation_stats"]["tokens_per_s"],
                  "tokens": record["generation_stats"].get("tokens_generated_now"), "engine": engine,
                  "completions": {f"{c['task_id']}#{c['completion_id']}": c['raw_completion']
                                  for c in map(json.loads, next(run.parent.glob("completions*.jsonl")).open())}}
    e = engine if isinstance(engine, dict) else {}
    print(f"{name:26s} generate {rows[name]['generate_s']:7.2f} s  {rows[name]['tokens_per_s']:9,.0f} tok/s  "
          + "  ".join(f"{k} {e[k]}" for k in ("rows", "steps", "setup_s", "prefill_s", "wait_s", "loop_s") if k in e))
for a, b in (("greedy_engine", "greedy_plain"), ("sampled_engine", "sampled_plain")):
    if a in rows and b in rows:
        x, y = rows[a]["completions"], rows[b]["completions"]
        same = sum(x[k] == y.get(k) for k in x)
        print(f"{a} vs {b}: {rows[a]['tokens_per_s'] / rows[b]['tokens_per_s']:.2f}x, {same}/{len(x)} identical")
json.dump({k: {**v, "completions": len(v["completions"])} for k, v in rows.items()},
          open(out / "small_model.json", "w"), indent=1)
prof = out / "greedy_engine_profiled.prof"
if prof.exists():
    stats = pstats.Stats(str(prof))
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(45)
PY
