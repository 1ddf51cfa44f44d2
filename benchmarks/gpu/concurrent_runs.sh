#!/usr/bin/env bash
# Two `evalsuite run` commands started together on one GPU (users sharing a machine, a CI matrix on one host):
# the real SmolLM2 GGUF, float32 greedy over HumanEval, each into its own folder. Prints each run's exit status,
# engine, fallback, peak memory, plan notes and time, and whether its 164 completions equal those of REFERENCE
# (a run of the same command alone, e.g. the acceptance's). Needs the acceptance's staged GGUF and wheels.
cd "$(dirname "$0")/../.." || exit 1
GGUF=${GGUF:-/tmp/models/SmolLM2-135M-Instruct.Q4_1.gguf}
REFERENCE=${REFERENCE:-/tmp/acceptance-runs/SmolLM2_GGUF-fp32_greedy_engine}
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/concurrent && mkdir -p /tmp/concurrent
for i in 1 2; do
  python3 -m evalsuite run --models "$GGUF" --output /tmp/concurrent/run$i --no-leaderboard --quiet \
    --allow-unsandboxed --device cuda --dtype float32 --temperature 0 > /tmp/concurrent/out$i 2> /tmp/concurrent/err$i &
  echo $! > /tmp/concurrent/pid$i
done
for i in 1 2; do wait "$(cat /tmp/concurrent/pid$i)"; echo "run$i exit $?"; done
python3 - "$REFERENCE" <<'PY'
import glob, json, sys
def rows(folder):
    found = glob.glob(f"{folder}/*/completions.jsonl")
    return {(r["task_id"], r["completion_id"]): r["raw_completion"] for r in map(json.loads, open(found[0]))} if found else {}
reference = rows(sys.argv[1])
for i in (1, 2):
    record = json.load(open(glob.glob(f"/tmp/concurrent/run{i}/*/record.json")[0]))
    model = record["model"]
    mine = rows(f"/tmp/concurrent/run{i}")
    same = sum(reference.get(k) == v for k, v in mine.items())
    engine = model.get("engine") or {}
    print(f"run{i}: status {record['status']}, engine {engine.get('name')} ({engine.get('rows')} rows, cache "
          f"{engine.get('cache_gib')} GiB), fallback {model.get('engine_fallback')}, peak "
          f"{model.get('gpu_peak_reserved_gib')} GiB, generate {record['timings_s'].get('generate')} s, pass@1 "
          f"{record['summary']['pass@1']:.4f}, {same}/{len(mine)} identical to the run alone")
for i in (1, 2):
    print(f"run{i} stderr:", open(f"/tmp/concurrent/err{i}").read()[-600:])
PY
