#!/usr/bin/env bash
# Two GPUs of one host (nvidia-h100-x2 or -h200-x2): the rungs that need them, in one call (<= 9 minutes).
#  1. the multi-gpu rung: GPT-J-6B (bf16, 12.1 GB) under --gpu-memory 8GiB fits neither GPU alone; the planner
#     must split it over both by itself. Greedy tokens compared with the same model whole on one GPU (plain
#     generate both: the split model runs through accelerate's hooks). Peak memory per GPU from nvidia-smi.
#  2. torchrun data parallel, 2 ranks vs 1 GPU, the realistic sampling workload, both --batch-invariant:
#     generate time, tok/s and identical completions (data_parallel.sh's run); then the same one-GPU run
#     without --batch-invariant, for what invariance costs.
# Carry .whl-core; the table is printed last, JSON in $OUT. On a host with more GPUs: SPLIT_DEVICES=0,1 keeps the
# split on two of them, RANKS="2 4" adds data-parallel runs at more ranks; INVARIANCE_COST=0 skips 2b.
cd "$(dirname "$0")/../.." && source benchmarks/gpu/common.sh
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
GREEDY=(--n 1 --temperature 0 --limit ${LIMIT_GREEDY:-8} --max-new-tokens ${NEW_GREEDY:-64} --engine transformers
        --no-leaderboard --quiet $SANDBOX_FLAG)
echo "== 1. multi-gpu rung: --gpu-memory 8GiB, planner's choice"
( if [ -n "${SPLIT_DEVICES:-}" ]; then export CUDA_VISIBLE_DEVICES=$SPLIT_DEVICES; fi
  watch_memory /tmp/peak-split $PY -m evalsuite run --models "$MODEL" --gpu-memory 8GiB "${GREEDY[@]}" \
    --output /tmp/split ) || echo "split run failed"
echo "== 1b. the same model whole on one GPU"
CUDA_VISIBLE_DEVICES=0 $PY -m evalsuite run --models "$MODEL" --strategy gpu "${GREEDY[@]}" --output /tmp/whole \
  || echo "whole run failed"
$PY benchmarks/gpu/compare_runs.py multi-gpu /tmp/split /tmp/whole --peak /tmp/peak-split \
  --json "$OUT/multi_gpu.json" | tee "$OUT/multi_gpu.txt"
echo "== 2. data parallel: 1 GPU vs torchrun 2 ranks, --batch-invariant"
EXTRA=--batch-invariant bash benchmarks/gpu/data_parallel.sh 2>&1 | grep -v -i warn | grep -v "^\[" | tail -24
[ "${INVARIANCE_COST:-1}" = 1 ] || exit 0  # INVARIANCE_COST=0: skip 2b (a short device budget)
echo "== 2b. the one-GPU run without --batch-invariant"
CUDA_VISIBLE_DEVICES=0 $PY -m evalsuite run --models "$MODEL" --n "${N:-40}" --limit "${LIMIT:-64}" --temperature 0.8 \
  --top-p 0.95 --max-new-tokens "${NEW:-256}" --no-leaderboard --quiet $SANDBOX_FLAG --output /tmp/dp-1-default \
  && $PY benchmarks/gpu/summarize_runs.py "$OUT/record-1gpu.json" /tmp/dp-1-default/*/record.json \
       --completions /tmp/dp-1 /tmp/dp-1-default --json "$OUT/invariance_cost.json" | tee "$OUT/invariance_cost.txt"
