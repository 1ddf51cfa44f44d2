#!/usr/bin/env bash
# Data parallel: the generation stage of one `evalsuite run` on one GPU vs the same run under torchrun with N
# ranks (each N of RANKS, default 2), same machine. Targets: 2 ranks >= 1.9x, 4 >= 3.7x, 8 >= 7.2x one GPU's
# tokens/s, completions identical to one GPU's (with EXTRA="--batch-invariant"; without it rare sampled tokens
# differ, as each rank's batches differ from one GPU's).
#   [RANKS="2 4"] [EXTRA=...] bash benchmarks/gpu/data_parallel.sh       (tables and JSON under $OUT)
# Scaling is bounded by each rank's tail: the last ~max-new-tokens steps, run by a few long samples at any rank
# count. At 64 problems x n=40 a rank of four holds 640 samples, 2.5 steps' worth of 256 rows, and its tail
# weighs as much as at one GPU (run 9: 3.21x at 4 ranks). At 4 and 8 ranks use every problem (LIMIT=164) so the
# tail is small against each rank's share.
cd "$(dirname "$0")/../.." && source benchmarks/gpu/common.sh
N=${N:-40} LIMIT=${LIMIT:-64} NEW=${NEW:-256} DEVICE_FLAG=""
[ "${TINY:-0}" = 1 ] && DEVICE_FLAG="--device cpu"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
ARGS=(run --models "$MODEL" --n "$N" --limit "$LIMIT" --temperature 0.8 --top-p 0.95 --max-new-tokens "$NEW"
      --no-leaderboard --quiet $SANDBOX_FLAG $DEVICE_FLAG ${EXTRA:-})
# untimed first: a fresh machine compiles the engine's kernels on first use (Triton's disk cache), which the one-GPU
# run, timed first, would otherwise pay alone (2026-11-27 on 4 H100s: set-up 4.8 s on one GPU, 1.2 s per rank)
rm -rf /tmp/dp-warm /tmp/dp-1
CUDA_VISIBLE_DEVICES=0 $PY -m evalsuite "${ARGS[@]}" --limit 1 --output /tmp/dp-warm >/dev/null 2>&1
CUDA_VISIBLE_DEVICES=0 $PY -m evalsuite "${ARGS[@]}" --output /tmp/dp-1 || exit 1
cp /tmp/dp-1/*/record.json "$OUT/record-1gpu.json"
for ranks in ${RANKS:-2}; do
  rm -rf "/tmp/dp-$ranks"
  $PY -m torch.distributed.run --standalone --nproc-per-node "$ranks" -m evalsuite -- "${ARGS[@]}" \
    --output "/tmp/dp-$ranks" || { echo "$ranks ranks: FAILED"; continue; }
  cp /tmp/dp-$ranks/*/record.json "$OUT/record-${ranks}gpu.json"
  echo "-- $ranks ranks vs 1 GPU"
  $PY benchmarks/gpu/summarize_runs.py "$OUT/record-1gpu.json" "$OUT/record-${ranks}gpu.json" \
    --completions /tmp/dp-1 "/tmp/dp-$ranks" --json "$OUT/summary-${ranks}gpu.json" | tee "$OUT/summary-${ranks}gpu.txt"
done
