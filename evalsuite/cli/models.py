"""``evalsuite models``: list the registry's aliases and their generation fixes, or show exactly what a run
would apply to one name (alias, local directory, GGUF file or hub id): dtype, pad/BOS/EOS ids, prompt style."""

from __future__ import annotations

import argparse
import json

from evalsuite.cli.option_groups import add_options, options_from_args
from evalsuite.cli.options import add_json, add_prompt_style
from evalsuite.models.options import LoadingOptions
from evalsuite.reporting.terminal import Table, key_values

MODELS_FLAGS = ("device", "dtype", "trust_remote_code", "revision")  # what decides the settings shown


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("models", help="list model aliases, or what a run applies to one model")
    parser.add_argument("name", nargs="?", help="show what a run would apply to this alias, directory, .gguf file "
                                                "or hub id (reads its config and tokenizer, not its weights)")
    add_json(parser, "the aliases, or the settings")
    add_options(parser, LoadingOptions, only=MODELS_FLAGS)
    add_prompt_style(parser)
    parser.set_defaults(handler=main)


def _fixes(spec) -> str:
    parts = []
    if spec.pad_token:
        parts.append(f"pad={spec.pad_token} (if the tokenizer has none)")
    if spec.bos != "auto":
        parts.append(f"bos={spec.bos} ({spec.reason})")
    if spec.extra_stop_sequences:
        parts.append("stops=" + ",".join(json.dumps(s) for s in spec.extra_stop_sequences))
    if spec.trust_remote_code:
        parts.append("remote-code")
    return " ".join(parts) or "-"


def _list(specs, as_json: bool) -> int:
    if as_json:
        print(json.dumps([spec.to_dict() for spec in specs], indent=2))
        return 0
    header = ("model", "hub id / path", "family", "dtype on GPU", "registry fixes")
    rows = [(spec.name, spec.location, spec.family or "(from config.json)", spec.dtype or "auto", _fixes(spec))
            for spec in specs]
    print(Table(rows, header, pad_last=False).render())
    print("\nBOS: the tokenizer's own behaviour unless an entry overrides it; on CPU every model runs in float32. "
          "`evalsuite models NAME` shows exactly what a run applies.")
    return 0


def _show(settings: dict) -> None:
    bos = settings["bos"]
    style = settings["prompt_style"]
    lines = [
        ("model", f"{settings['model']}  ({settings['location']})"),
        ("family", str(settings["family"])),
        ("revision", str(settings["revision"])),
        ("device/dtype", f"{settings['device']} {settings['dtype']}"),
        ("pad", f"id {settings['pad']['id']} {settings['pad']['token']!r}"),
        ("bos", f"id {bos['id']} {bos['token']!r} ({bos['source']})" if bos["id"] is not None
         else f"none ({bos['source']})"),
        ("eos", ", ".join(f"{i} {t!r}" for i, t in zip(settings["eos"]["ids"], settings["eos"]["tokens"]))),
        ("prompt style", f"{style['requested']} -> {style['style']} ({style['reason']})"
         + (f"; chat template sha256 {style['chat_template_sha256'][:16]}" if style["chat_template_sha256"] else "")),
        ("extra stops", ", ".join(json.dumps(s) for s in settings["extra_stop_sequences"]) or "-"),
    ]
    lines += [("fix", fix) for fix in settings["tokenizer_fixes"]]
    print(key_values(lines))


def _cached(hub_id: str, revision: str | None = None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(hub_id, "config.json", revision=revision), str)


def main(args: argparse.Namespace) -> int:
    from evalsuite.errors import EvalsuiteError
    from evalsuite.models.registry import list_models, resolve_model

    loading = options_from_args(LoadingOptions, args, only=MODELS_FLAGS)
    if not args.name:
        if loading.revision is not None:
            raise EvalsuiteError("--revision needs a model: evalsuite models NAME --revision REV")
        return _list(list_models(), args.json)
    from evalsuite.cli import preflight

    preflight.check_model_files([args.name])
    spec = resolve_model(args.name, revision=loading.revision)
    if spec.source == "builtin":  # no checkpoint to read: it asked the hub for a config named "reference"
        if args.json:
            print(json.dumps(spec.to_dict(), indent=2))
        else:
            print("reference: the built-in model; it answers every problem with its canonical solution (no weights, "
                  "no tokenizer)")
        return 0
    if spec.source == "hub":  # a hub id that is no alias: refused in one line where `run` would refuse it
        from evalsuite.generation.hf.loading import check_hub_reachable

        check_hub_reachable(spec)
    if spec.source in ("alias", "hub") and not _cached(spec.location, spec.revision):
        code = _list([spec], args.json)
        if not args.json:
            print(f"{spec.location} is not in the local Hugging Face cache: pad, BOS, EOS and prompt style are read "
                  "from its tokenizer when a run loads it")
        return code
    from evalsuite.generation.hf.inspection import run_settings

    settings = run_settings(spec, loading, args.prompt_style)
    if args.json:
        print(json.dumps({**spec.to_dict(), "run": settings}, indent=2))
    else:
        _show(settings)
    return 0
