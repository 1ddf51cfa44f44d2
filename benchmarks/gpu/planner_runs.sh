#!/usr/bin/env bash
# Issue 5 on a lent GPU machine: the memory planner end to end. Builds the GPT-J-6B-shaped fp32 checkpoint
# (24 GB, with a small tokenizer), times the loading strategies named in JOBS with bench_loading.py, then
# runs `evalsuite run` under the cap once per strategy in RUNS and summarises the run records.
#   JOBS="gpt-j-6b:ds-inference,gpt-j-6b:cpu" RUNS="auto,zero-inference" bash benchmarks/gpu/planner_runs.sh
# RUNS entries are STRATEGY or STRATEGY@CAP ("auto" lets the planner choose); CAP defaults to $CAP (16GiB),
# "none" for no cap. Needs the wheels of bitsandbytes, DeepSpeed and pydantic under .whl/ where the machine
# lacks them. TINY=1 (CPU smoke test): a tiny GPT-J instead of the 6B one, no loading table.
cd "$(dirname "$0")/../.." || exit 1
export MODEL=${CKPT:-/tmp/ckpt}/gpt-j-6b BUILD_MODEL=${TINY:-0}
source benchmarks/gpu/common.sh  # installs the carried wheels and this checkout
export PYTHONPATH=/tmp/site:$PWD
CAP=${CAP:-16GiB} JOBS=${JOBS:-} RUNS=${RUNS:-auto} BUDGET=${BUDGET:-540}
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
MODELS=${MODELS:-gpt-j-6b}  # checkpoints to build (bench_loading.py's shapes); runs use gpt-j-6b
[ "${TINY:-0}" = 1 ] || $PY benchmarks/bench_loading.py make --dir "$(dirname "$MODEL")" --models "$MODELS" 2>&1 \
  | grep -v Warning
if [ -n "$JOBS" ]; then
  MODEL_ARGS=(); for m in ${MODELS//,/ }; do MODEL_ARGS+=(--model "$m=$(dirname "$MODEL")/$m"); done
  $PY benchmarks/bench_loading.py run "${MODEL_ARGS[@]}" --jobs "$JOBS" --gpu-memory "$CAP" \
    --timeout "${JOB_TIMEOUT:-300}" --budget-s $((BUDGET - (SECONDS - START) - ${RESERVE:-120})) \
    --out "$OUT/loading.json" 2>&1 | grep -v Warning
fi
RECORDS=()
for entry in ${RUNS//,/ }; do
  strategy=${entry%@*}; cap=$CAP; [ "$entry" != "$strategy" ] && cap=${entry#*@}
  if [ $((BUDGET - (SECONDS - START))) -lt 45 ]; then echo "== run $entry: skipped, budget spent"; continue; fi
  echo "== evalsuite run, strategy $strategy, --gpu-memory $cap"
  FORCE=(); [ "$strategy" != auto ] && FORCE=(--strategy "$strategy")
  [ "$cap" != none ] && FORCE+=(--gpu-memory "$cap")
  /usr/bin/time -f "   wall %e s" $PY -m evalsuite run --models "$MODEL" "${FORCE[@]}" \
    --n "${N:-2}" --limit "${LIMIT:-3}" --temperature 0.8 --max-new-tokens "${NEW:-32}" --seed 1 \
    --output "/tmp/runs-$strategy" --leaderboard-dir /tmp/planner-lb --quiet $SANDBOX_FLAG 2>&1 \
    | grep -v -i "warn" | tail -4
  record=$(ls -t /tmp/runs-"$strategy"/*/record.json 2>/dev/null | head -1)
  mkdir -p /tmp/records && [ -n "$record" ] && cp "$record" "/tmp/records/$strategy.json" \
    && RECORDS+=("/tmp/records/$strategy.json")
done
if [ ${#RECORDS[@]} -gt 0 ]; then
  $PY benchmarks/gpu/summarize_runs.py "${RECORDS[@]}" --json "$OUT/runs_summary.json"
  tar czf "$OUT/run_records.tgz" -C /tmp records
fi
if [ -n "${PYTEST:-}" ]; then $PY -m pytest -q -p no:cacheprovider $PYTEST 2>&1 | tail -6; fi
