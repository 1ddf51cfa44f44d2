#!/usr/bin/env bash
# Issue 7, acceptance 2, on two GPUs: the generation stage of one `evalsuite run` on one GPU vs the same run
# under torchrun with two ranks, same session. Target: two-rank generate time <= 0.55x one-GPU time.
#   bash benchmarks/gpu/data_parallel_h200x2.sh       (writes JSON under $OUT)
cd "$(dirname "$0")/../.." && source benchmarks/gpu/common.sh
N=${N:-40} LIMIT=${LIMIT:-64} NEW=${NEW:-256} DEVICE_FLAG=""
[ "${TINY:-0}" = 1 ] && DEVICE_FLAG="--device cpu"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
ARGS=(run --models "$MODEL" --n "$N" --limit "$LIMIT" --temperature 0.8 --top-p 0.95 --max-new-tokens "$NEW"
      --no-leaderboard --quiet $SANDBOX_FLAG $DEVICE_FLAG)
CUDA_VISIBLE_DEVICES=0 $PY -m evalsuite "${ARGS[@]}" --output /tmp/dp-1 || exit 1
cp /tmp/dp-1/*/record.json "$OUT/record-1gpu.json"
$PY -m torch.distributed.run --standalone --nproc-per-node 2 -m evalsuite -- "${ARGS[@]}" --output /tmp/dp-2 || exit 1
cp /tmp/dp-2/*/record.json "$OUT/record-2gpu.json"
$PY benchmarks/gpu/summarize_runs.py "$OUT/record-1gpu.json" "$OUT/record-2gpu.json" \
  --completions /tmp/dp-1 /tmp/dp-2 --json "$OUT/summary.json" | tee "$OUT/summary.txt"
