#!/usr/bin/env bash
# Issue 4, acceptance 4, on one H100: `evalsuite run --n 20 --limit 20` on a GPT-J-6B-shaped random checkpoint,
# through the fast engine (auto) and plain transformers generate, plus the backend vs model.generate benchmark.
#   bash benchmarks/gpu/generation.sh            (writes JSON under $OUT)
cd "$(dirname "$0")/../.." && source benchmarks/gpu/common.sh
N=${N:-20} LIMIT=${LIMIT:-20} NEW=${NEW:-256}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
if [ "${TINY:-0}" = 1 ]; then BENCH="--tiny"; else BENCH=""; fi
$PY benchmarks/bench_hf_backend.py $BENCH --out "$OUT/hf_backend.json" 2>&1 | tail -8
for engine in auto transformers; do
  $PY -m evalsuite run --models "$MODEL" --n "$N" --limit "$LIMIT" --temperature 0.8 --top-p 0.95 \
    --max-new-tokens "$NEW" --engine "$engine" --output "/tmp/runs-$engine" --leaderboard-dir "$OUT/lb-$engine" \
    --quiet $SANDBOX_FLAG || exit 1
  cp /tmp/runs-$engine/*/record.json "$OUT/record-$engine.json"
done
$PY benchmarks/gpu/summarize_runs.py "$OUT/record-auto.json" "$OUT/record-transformers.json" \
  --completions /tmp/runs-auto /tmp/runs-transformers --json "$OUT/summary.json" | tee "$OUT/summary.txt"
