#!/usr/bin/env bash
# Four GPUs of one host (nvidia-h100-x4 / -h200-x4), the multi-gpu rung over four GPUs, <= 9 minutes:
# a Llama-2-70B-shaped random bf16 checkpoint (~138 GB, written tensor by tensor into /dev/shm where it has room,
# else /tmp) under --gpu-memory $CAP (44GiB: three GPUs hold 132 GiB, too little, so the planner must split it four
# ways); the plan, tokens/s, load time and peak memory per GPU, and greedy completions against the same model under
# $BIG_CAP (fewer, larger shares). Carry .whl-core. JSON and logs in $OUT.
# TINY=1 checks the script on a CPU machine: a 2-layer model of the same width, both runs on the CPU.
cd "$(dirname "$0")/../.." && BUILD_MODEL=0 source benchmarks/gpu/common.sh
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
CAP=${CAP:-44GiB} BIG_CAP=${BIG_CAP:-76GiB}
ROOT=/tmp
[ "$(df --output=avail -BG /dev/shm 2>/dev/null | tail -1 | tr -dc 0-9)" -gt 160 ] 2>/dev/null && ROOT=/dev/shm
CKPT=$ROOT/ckpt70/llama-2-70b
GREEDY=(--n 1 --temperature 0 --limit "${LIMIT:-2}" --max-new-tokens "${NEW:-16}" --engine transformers
        --no-leaderboard --quiet $SANDBOX_FLAG)
if [ "${TINY:-0}" = 1 ]; then
  LAYERS=2 $PY benchmarks/bench_loading.py make --dir "$ROOT/ckpt70" --models llama-2-70b 2>&1 | grep -v -i warn
  SPLIT=(--device cpu) REFERENCE=(--device cpu)
else
  $PY benchmarks/bench_loading.py make --dir "$ROOT/ckpt70" --models llama-2-70b 2>&1 | grep -v -i warn
  SPLIT=(--gpu-memory "$CAP") REFERENCE=(--gpu-memory "$BIG_CAP")
fi
echo "== the 70B shape under --gpu-memory $CAP (planner's choice)"
rm -rf /tmp/four /tmp/big
watch_memory /tmp/peak-four $PY -m evalsuite run --models "$CKPT" "${SPLIT[@]}" "${GREEDY[@]}" --output /tmp/four \
  > "$OUT/four.log" 2>&1 || { echo "split run failed"; tail -5 "$OUT/four.log"; }
cat /tmp/peak-four; echo
echo "== the same under --gpu-memory $BIG_CAP"
$PY -m evalsuite run --models "$CKPT" "${REFERENCE[@]}" "${GREEDY[@]}" --output /tmp/big > "$OUT/big.log" 2>&1 \
  || { echo "reference run failed"; tail -5 "$OUT/big.log"; }
WANT=4; [ "${TINY:-0}" = 1 ] && WANT=0
$PY benchmarks/gpu/compare_runs.py "multi-gpu over four" /tmp/four /tmp/big --peak /tmp/peak-four --want-gpus $WANT \
  --json "$OUT/split_four.json" | tee "$OUT/split_four.txt"
