"""Where two greedy runs of the same weights part, and how close the model's two choices were there.

    .venv/bin/python benchmarks/greedy_divergence.py --work /tmp/ppwork [--vs control]

For every problem whose raw completions differ between evalsuite and a peer in a work folder of
``peer_parity_device.py`` (or between evalsuite's default run and its control run, ``--vs control``), this
finds the first token at which they part: evalsuite's completion is re-encoded (kept only where the
re-encoding decodes back to the same text), the tokens both sides share are those before the first one that
reaches past the first differing character. The prompt and those shared tokens go once through the model
in float64 on the CPU, and the logits of the two tokens the sides chose are compared there.

At a first differing token, float64 tells which side computed closer to the exact value: the side whose
token is float64's argmax did, and the logit gap between the two tokens says how close the choice was (a
few hundredths of a logit is the scale of bfloat16 rounding; float32 kernels differ by far less). Where
the other side's token found by re-encoding is not float64's runner-up, the re-encoding split that text
differently from how it was generated, and the row says so ("neither" or a gap of several logits).
Completions where one side's text is a prefix of the other's are differences of stop or length, not of
numbers, and are counted apart.

Writes ``benchmarks/results/greedy_divergence.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peer_parity as pp  # noqa: E402
import peer_parity_device as ppd  # noqa: E402

PART_MODEL = {"evalplus": "smollm2", "lmeval": "gemma", "bigcode": "gemma"}


def first_difference(a: str, b: str) -> int:
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def peer_texts(work: Path, part: str) -> dict[str, dict]:
    return {json.loads(p.read_text())["task_id"]: json.loads(p.read_text())
            for p in sorted((work / "units" / part).glob("*.json"))}


def other_side(work: Path, part: str, vs: str) -> tuple[dict[str, str], dict[str, list[int]]]:
    """The texts to compare evalsuite's default run with, and the prompt ids fed for them."""
    if vs == "peer":
        units = peer_texts(work, part)
        return {t: u["raw"] for t, u in units.items()}, {t: u["prompt_ids"] for t, u in units.items()}
    control = ppd.load_ours(work, part + ppd.CONTROL_SUFFIX)
    ids = ppd.load_ours(work, part)["ids"]
    return {t: r["raw_completion"] for t, r in control["rows"].items()}, ids


def divergences(work: Path, part: str, vs: str, limit: int | None) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = pp.hf_folder(PART_MODEL[part])
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    ours = ppd.load_ours(work, part)["rows"]
    theirs, prompt_ids = other_side(work, part, vs)
    rows, counts = [], {"identical": 0, "prefix (stop or length)": 0, "parted": 0, "not re-encodable": 0}
    for tid in [t for t in ours if t in theirs][:limit]:
        x = ours[tid]["raw_completion"].replace("\t", "    ") if part == "evalplus" else ours[tid]["raw_completion"]
        y = theirs[tid]
        if x == y:
            counts["identical"] += 1
            continue
        at = first_difference(x, y)
        if at == min(len(x), len(y)):
            counts["prefix (stop or length)"] += 1
            continue
        ids = tokenizer.encode(x, add_special_tokens=False)
        if tokenizer.decode(ids) != x:
            counts["not re-encodable"] += 1
            rows.append({"task_id": tid, "char": at, "kind": "not re-encodable"})
            continue
        k = next(i for i in range(len(ids)) if len(tokenizer.decode(ids[:i + 1])) > at)
        shared = tokenizer.decode(ids[:k])
        ours_token = ids[k]
        rest = tokenizer.encode(y[len(shared):], add_special_tokens=False)
        their_token = rest[0] if rest else None
        with torch.no_grad():
            logits = model(torch.tensor([list(prompt_ids[tid]) + ids[:k]]), logits_to_keep=1).logits[0, -1]
        top = torch.topk(logits, 2)
        gap = float(logits[ours_token] - logits[their_token]) if their_token is not None else None
        counts["parted"] += 1
        rows.append({"task_id": tid, "char": at, "token_index": k, "kind": "parted",
                     "evalsuite_token": tokenizer.decode([ours_token]), "other_token":
                     tokenizer.decode([their_token]) if their_token is not None else None,
                     "logit_gap_float64": gap, "float64_top2_gap": float(top.values[0] - top.values[1]),
                     "float64_argmax_is": "evalsuite" if int(top.indices[0]) == ours_token else
                     "other" if int(top.indices[0]) == their_token else "neither"})
        print(json.dumps(rows[-1]), flush=True)
    gaps = sorted(abs(r["logit_gap_float64"]) for r in rows if r.get("logit_gap_float64") is not None)
    return {"part": part, "vs": vs, "compared": sum(counts.values()), "counts": counts,
            "median_abs_gap": gaps[len(gaps) // 2] if gaps else None,
            "abs_gap_below_0.2": sum(1 for g in gaps if g < 0.2),
            "float64_argmax_sides": {s: sum(1 for r in rows if r.get("float64_argmax_is") == s)
                                     for s in ("evalsuite", "other", "neither")},
            "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--vs", choices=["peer", "control"], default="peer")
    parser.add_argument("--parts", default="evalplus,lmeval,bigcode")
    parser.add_argument("--limit", type=int, help="at most this many problems a part")
    parser.add_argument("--label", default="", help="appended to each part's key in the JSON (which run this is)")
    parser.add_argument("--out", default=str(pp.RESULTS / "greedy_divergence.json"))
    args = parser.parse_args()
    out = Path(args.out)
    report = json.loads(out.read_text()) if out.exists() else {}
    for part in args.parts.split(","):
        result = divergences(Path(args.work), part, args.vs, args.limit)
        result["work"] = args.work
        report[f"{part}@{args.vs}{args.label}"] = result
        print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
        out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
