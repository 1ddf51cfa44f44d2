#!/usr/bin/env bash
# Four GPUs of one host (nvidia-h100-x4 / -h200-x4), issue 33's runs 2 and 4 in one call (<= 9 minutes); run 1
# (data parallel at 1, 2 and 4 ranks) is `SPLIT_DEVICES=0,1 RANKS="2 4" LIMIT=164 bash benchmarks/gpu/two_gpus.sh`,
# run 3 (the multi-gpu rung split four ways, a Llama-2-70B shape) is `bash benchmarks/gpu/split_four.sh`.
#  2. --spread models: four different model folders (GPT-J-6B, BLOOM-7B1, Llama-2-7B, Mistral-7B shapes, random
#     weights) on four GPUs under torchrun vs the same four one after another on one GPU: wall time, every
#     leaderboard entry present.
#  4. One rank of four killed (SIGKILL) mid-generation: how long the others take to stop, the exit status and
#     message, and a rerun that keeps what was saved and generates only the rest.
# Carry .whl-core; JSON and logs in $OUT. PARTS="kill" runs part 4 alone (default "spread kill").
cd "$(dirname "$0")/../.." && source benchmarks/gpu/common.sh
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
now() { date +%s.%N; }
CKPT=/tmp/ckpt
PARTS=${PARTS:-spread kill}
[[ $PARTS == *spread* ]] && $PY benchmarks/bench_loading.py make --dir $CKPT --models bloom-7b1,llama-2-7b,mistral-7b \
  2>&1 | grep -v -i warn
FOLDERS="$MODEL,$CKPT/bloom-7b1,$CKPT/llama-2-7b,$CKPT/mistral-7b"
WORK=(--n 20 --limit 8 --max-new-tokens 128 --temperature 0.8 --seed 1 --quiet $SANDBOX_FLAG)
if [[ $PARTS == *spread* ]]; then
echo "== 2. --spread models over four GPUs vs one after another"
wait_gpus_idle
rm -rf /tmp/spread /tmp/serial
t0=$(now)
CUDA_VISIBLE_DEVICES=0 $PY -m evalsuite run --models "$FOLDERS" "${WORK[@]}" --output /tmp/serial \
  --leaderboard-dir /tmp/serial/board > "$OUT/serial.log" 2>&1; serial_rc=$?
t1=$(now)
$PY -m torch.distributed.run --standalone --nproc-per-node 4 -m evalsuite -- run --models "$FOLDERS" "${WORK[@]}" \
  --spread models --output /tmp/spread --leaderboard-dir /tmp/spread/board > "$OUT/spread.log" 2>&1; spread_rc=$?
t2=$(now)
$PY - "$t0" "$t1" "$t2" "$serial_rc" "$spread_rc" <<'PY' | tee "$OUT/spread.txt"
import json, os, pathlib, sys
t0, t1, t2 = map(float, sys.argv[1:4])
def entries(root):
    board = pathlib.Path(root) / "board" / "leaderboard.json"
    return sorted(e["model"] for e in json.loads(board.read_text())["entries"]) if board.exists() else []
serial, spread = entries("/tmp/serial"), entries("/tmp/spread")
result = {"serial_s": t1 - t0, "spread_s": t2 - t1, "speedup": (t1 - t0) / (t2 - t1), "serial_exit": int(sys.argv[4]),
          "spread_exit": int(sys.argv[5]), "serial_entries": serial, "spread_entries": spread}
print(f"spread models: {'ok' if len(spread) == 4 and result['spread_exit'] == 0 else 'FAILED'}  four models one after "
      f"another {result['serial_s']:.1f} s, --spread models on 4 GPUs {result['spread_s']:.1f} s "
      f"({result['speedup']:.2f}x); entries {len(serial)} / {len(spread)}: {spread}")
json.dump(result, open(os.environ["OUT"] + "/spread.json", "w"), indent=1)
PY
fi
[[ $PARTS == *kill* ]] || exit 0
echo "== 4. one rank of four killed mid-run"
KILL_ARGS=(run --models "$MODEL" --n 40 --limit 64 --max-new-tokens 256 --temperature 0.8 --top-p 0.95 --no-leaderboard
           --quiet $SANDBOX_FLAG --output /tmp/kill)
for attempt in 1 2; do  # a start that fails before any row is saved (run 9: NCCL at the first collective) is retried once
  rm -rf /tmp/kill; wait_gpus_idle
  NCCL_DEBUG=${NCCL_DEBUG:-WARN} $PY -m torch.distributed.run --standalone --nproc-per-node 4 -m evalsuite -- \
    "${KILL_ARGS[@]}" > "$OUT/kill.log" 2>&1 &
  launcher=$!
  saved=0
  for _ in $(seq 300); do  # until some rows are saved
    saved=$(cat /tmp/kill/*/completions*.jsonl 2>/dev/null | wc -l)
    [ "$saved" -ge 100 ] && break
    kill -0 $launcher 2>/dev/null || break
    sleep 0.5
  done
  [ "$saved" -ge 100 ] && break
  if kill -0 $launcher 2>/dev/null; then  # still short of 100 rows after 150 s: stop it, never wait it out
    kill -TERM $launcher; sleep 20; pkill -9 -f "evalsuite -- run"
  fi
  wait $launcher; echo "attempt $attempt: the run ended (exit $?) with $saved rows saved, before the kill:"
  grep -i -E "error|fail" "$OUT/kill.log" | head -5; cp "$OUT/kill.log" "$OUT/kill-attempt$attempt.log"
done
victim=""
for pid in $(pgrep -P "$launcher"); do  # the ranks are the launcher's children
  tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep -qx "LOCAL_RANK=2" && victim=$pid
done
echo "saved rows before the kill: $saved; killing rank 2 (pid $victim)"
t_kill=$(now); kill -9 "$victim"; wait $launcher; kill_rc=$?; t_end=$(now)
left=$(pgrep -f "evalsuite -- run" | wc -l)
kept=$(cat /tmp/kill/*/completions*.jsonl 2>/dev/null | wc -l)
t_rerun=$(now)
$PY -m torch.distributed.run --standalone --nproc-per-node 4 -m evalsuite -- "${KILL_ARGS[@]}" > "$OUT/rerun.log" 2>&1
rerun_rc=$?; t_done=$(now)
$PY - "$t_kill" "$t_end" "$kill_rc" "$left" "$kept" "$rerun_rc" "$t_rerun" "$t_done" <<'PY' | tee "$OUT/kill.txt"
import json, os, pathlib, sys
t_kill, t_end = float(sys.argv[1]), float(sys.argv[2])
kill_rc, left, kept, rerun_rc = map(int, sys.argv[3:7])
record = json.loads(next(pathlib.Path("/tmp/kill").glob("*/record.json")).read_text())
stats = record.get("generation_stats", {})
log = pathlib.Path(os.environ["OUT"], "kill.log").read_text().splitlines()
said = [line for line in log if "error" in line.lower() or "rank" in line.lower()][-4:]
resumed = [line for line in pathlib.Path(os.environ["OUT"], "rerun.log").read_text().splitlines() if "kept" in line]
ok = (t_end - t_kill) < 60 and kill_rc != 0 and left == 0 and rerun_rc == 0 and record["status"] == "complete" \
    and stats.get("completions_resumed", 0) > 0
result = {"stop_s": t_end - t_kill, "exit": kill_rc, "processes_left": left, "rows_kept": kept, "rerun_exit": rerun_rc,
          "rerun_s": float(sys.argv[8]) - float(sys.argv[7]), "status": record["status"],
          "completions_resumed": stats.get("completions_resumed"),
          "completions_generated_now": stats.get("completions_generated_now"), "said": said, "resume_lines": resumed[:4]}
print(f"rank killed: {'ok' if ok else 'FAILED'}  others stopped {result['stop_s']:.1f} s after the kill, exit "
      f"{kill_rc}, {left} processes left, {kept} rows kept; rerun exit {rerun_rc} in {result['rerun_s']:.1f} s: "
      f"{stats.get('completions_resumed')} resumed, {stats.get('completions_generated_now')} generated")
for line in said + resumed[:4]:
    print("   ", line[:200])
json.dump(result, open(os.environ["OUT"] + "/kill.json", "w"), indent=1)
PY
