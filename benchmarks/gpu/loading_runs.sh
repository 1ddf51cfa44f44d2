#!/usr/bin/env bash
# The acceptance run of the memory planner on a lent H100 (see docs/benchmarks.md, "Loading strategies").
# usage: benchmarks/gpu/loading_runs.sh OUTDIR SECONDS MODELS JOBS
#   MODELS: comma-separated of gpt-j-6b,bloom-7b1 ; JOBS as bench_loading.py --jobs (MODEL:STRATEGY,...)
set -u
OUTDIR=${1:-out}; BUDGET=${2:-560}; MODELS=${3:-gpt-j-6b}; JOBS=${4:-gpt-j-6b:baseline,gpt-j-6b:auto}
START=$SECONDS
BUILD_MODEL=0 source benchmarks/gpu/common.sh  # installs the carried wheels (.whl-core, .whl)
export PYTHONPATH=/tmp/site:$PWD
mkdir -p "$OUTDIR"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader; free -g | head -2; df -h /tmp | tail -1
python3 -c "import torch, transformers, accelerate; print('torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__)"
python3 -c "import bitsandbytes; print('bitsandbytes', bitsandbytes.__version__)" 2>&1 | tail -1
python3 -c "import deepspeed; print('deepspeed', deepspeed.__version__)" 2>&1 | tail -1
{
  echo "### this machine, capped at 16GiB per GPU, offload dir /tmp/offload"
  /usr/bin/time -f "wall %e s, max RSS %M KiB" python3 -m evalsuite plan --models gpt-j-6b,bloom-7b1,bloom \
      --gpu-memory 16GiB --offload-dir /tmp/offload --batch-size 32 --prompt-len 32 --max-new-tokens 32
  echo "### bloom for one 16GiB GPU with 400GiB RAM"
  /usr/bin/time -f "wall %e s, max RSS %M KiB" python3 -m evalsuite plan --models bloom --gpus 1 --gpu-memory 16GiB --cpu-memory 400GiB
} > "$OUTDIR/plan.txt" 2>&1
tail -5 "$OUTDIR/plan.txt"
python3 benchmarks/bench_loading.py make --dir /tmp/ckpt --models "$MODELS" 2>&1 | grep -v Warning | tee "$OUTDIR/make.log"
ARGS=()
for m in ${MODELS//,/ }; do ARGS+=(--model "$m=/tmp/ckpt/$m"); done
python3 benchmarks/bench_loading.py run "${ARGS[@]}" --jobs "$JOBS" --gpu-memory 16GiB \
    --offload-gpu-memory 8GiB --timeout 200 --budget-s $((BUDGET - (SECONDS - START))) --out "$OUTDIR/loading.json"
