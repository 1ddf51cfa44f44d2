# Shared set-up for the GPU recipes: install carried wheels (.whl-core: evalsuite's own needs; .whl, where
# carried: bitsandbytes, DeepSpeed and theirs) and this checkout (the GPU image has no network), build the
# random GPT-J-6B-shaped checkpoint. Source it; TINY=1 runs everything on CPU.
set -uo pipefail
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/evalsuite-gpu-out}
PY=${PY:-python3}  # the interpreter that has torch (the GPU image's python3)
mkdir -p "$OUT"
if [ -d .whl-core ] && [ "${SKIP_INSTALL:-0}" != 1 ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-core/*.whl \
    && export PYTHONPATH=/tmp/site
  $PY -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null || exit 1
fi
if ls .whl/*.whl >/dev/null 2>&1 && [ "${SKIP_INSTALL:-0}" != 1 ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "wheel install failed"
fi
watch_memory() {  # the most memory used on each GPU while "$@" runs, into $1's file
  local out=$1; shift
  nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 > "$out.log" &
  local watcher=$!
  "$@"; local status=$?
  kill $watcher 2>/dev/null; wait $watcher 2>/dev/null
  awk -F', ' '{ if ($2 > m[$1]) m[$1] = $2 } END { for (g in m) printf "gpu%s %.1f GiB  ", g, m[g] / 1024 }' \
    "$out.log" > "$out"
  return $status
}
wait_gpus_idle() {  # until no process holds a GPU (at most $1 s, default 60): a rank's CUDA context outlives its
  # launcher's exit by a moment, and the next multi-rank start can fail its first collective on a busy GPU
  local left
  for _ in $(seq $((${1:-60} * 2))); do
    left=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | wc -l)
    [ "$left" = 0 ] && return 0; sleep 0.5
  done
  echo "GPUs still held by: $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | tr '\n' ';')"
}
MODEL=${MODEL:-/tmp/gptj6b}
# bubblewrap is not on the GPU image: random-weight completions are executed with rlimits only there.
SANDBOX_FLAG=$(command -v bwrap >/dev/null 2>&1 && echo "" || echo "--allow-unsandboxed")
if [ ! -f "$MODEL/config.json" ] && [ "${BUILD_MODEL:-1}" = 1 ]; then
  $PY - "$MODEL" "${TINY:-0}" <<'PY'
import sys, time
from pathlib import Path
sys.path.insert(0, "benchmarks")
from bench_hf_backend import build_checkpoint
import torch
tiny = sys.argv[2] == "1"
started = time.perf_counter()
build_checkpoint(Path(sys.argv[1]), tiny, "cuda" if torch.cuda.is_available() else "cpu", "bfloat16", 4000)
print(f"checkpoint {sys.argv[1]} built in {time.perf_counter() - started:.1f} s")
PY
fi
