"""The model registry (evalsuite/configs/models.yaml) and ``evalsuite models``."""

from __future__ import annotations

import json

import pytest

from evalsuite.cli import main as cli_main
from evalsuite.errors import EvalsuiteError
from evalsuite.models.registry import list_models, load_registry, parse_registry, resolve_model, with_family

REQUIRED_ALIASES = (
    "gpt-j-6b", "bloom", "bloom-7b1", "bloom-3b", "bloom-1b7", "bloom-560m",
    "codegen-350M-mono", "codegen-2B-mono", "codegen-6B-mono", "codegen-16B-mono",
    "santacoder", "starcoder", "starcoderbase", "gpt-neox-20b", "pythia-70m", "pythia-12b",
    "llama-2-7b", "codellama-7b", "mistral-7b", "qwen2.5-coder-7b",
)


@pytest.mark.parametrize("alias", REQUIRED_ALIASES)
def test_required_aliases_resolve_with_their_family(alias):
    spec = resolve_model(alias)
    assert spec.source == "alias" and "/" in spec.location
    assert spec.family in load_registry().families
    assert spec.no_split_module_classes and spec.dtype in ("float16", "bfloat16")
    assert spec.padding_side == "left"


def test_family_fixes_reach_the_aliases():
    assert resolve_model("gpt-j-6b").pad_token == "eos"
    # BOS follows the tokenizer (real Llama-2 tokenizers add <s>, SmolLM2's does not); no family forces it
    assert all(spec.bos == "auto" for spec in list_models())
    assert all(not hasattr(spec, "strip_prompt_whitespace") for spec in list_models())  # a protocol setting now
    assert "<|file_sep|>" in resolve_model("qwen2.5-coder-7b").stop_sequences
    assert resolve_model("bloom-560m").no_split_module_classes == ("BloomBlock",)
    assert resolve_model("santacoder-remote-code").trust_remote_code is True
    assert not any(spec.trust_remote_code for spec in list_models() if spec.name != "santacoder-remote-code")


def test_hub_id_of_an_entry_gets_its_fixes_and_unknown_hub_ids_defer_to_config():
    assert resolve_model("EleutherAI/gpt-j-6b").family == "gptj"
    spec = resolve_model("someone/some-model")
    assert spec.source == "hub" and spec.family is None
    filled = with_family(spec, "gpt_neox")
    assert filled.family == "gpt_neox" and filled.pad_token == "eos"


def test_local_directory_uses_its_config_model_type(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    spec = resolve_model(str(tmp_path))
    assert spec.source == "local" and spec.location == str(tmp_path.resolve())
    assert spec.family == "llama" and spec.bos == "auto" and spec.pad_token == "unk"
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text(json.dumps({"model_type": "brand_new_arch"}))
    unknown = resolve_model(str(tmp_path / "odd"))
    assert unknown.pad_token is None and unknown.bos == "auto"  # derived from the tokenizer at load time


def test_openai_names_never_fail_and_pick_up_entries():
    assert resolve_model("my served model", backend="openai").source == "server"
    assert resolve_model("Qwen/Qwen2.5-Coder-7B", backend="openai").extra_stop_sequences
    assert resolve_model("reference").source == "builtin"


@pytest.mark.parametrize("name", ["./missing-dir", "/no/such/dir", "a b c", "x/y/z", "../up"])
def test_unknown_names_fail_with_one_clear_line(name, tmp_path, monkeypatch):
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # relative names resolve where nothing exists ("../up" was a folder in /tmp)
    with pytest.raises(EvalsuiteError, match="not an alias .*not a local directory, not a hub id"):
        resolve_model(name)


@pytest.mark.parametrize("text,message", [
    ("models:\n  m:\n    hub_id: a/b\n    paddingside: left\n", r"models\.m: unknown field 'paddingside'"),
    ("models:\n  m:\n    hub_id: a/b\n    padding_side: right\n", r"models\.m\.padding_side: expected one of left"),
    ("models:\n  m:\n    family: gpt2\n", r"models\.m: missing hub_id"),
    ("models:\n  m:\n    hub_id: a/b\n    family: nope\n", "unknown family 'nope'"),
    ("models:\n  m: [\n", r"models\.yaml:\d+: invalid YAML"),
    ("models:\n  m:\n    hub_id: a/b\n    extra_stop_sequences: \"\\n\"\n", "expected a list of non-empty strings"),
    ("families:\n  llama:\n    bos: add\n", r"families\.llama: 'bos' is a per-alias override"),
    ("models:\n  m:\n    hub_id: a/b\n    bos: add\n", r"models\.m: bos 'add' overrides the tokenizer; add a 'reason'"),
    ("models:\n  m:\n    hub_id: a/b\n    strip_prompt_whitespace: true\n", "protocol setting now: --strip-prompt"),
])
def test_bad_registry_entries_are_named(text, message):
    with pytest.raises(EvalsuiteError, match=message):
        parse_registry(text, source="models.yaml")


def test_models_command_lists_and_resolves(capsys, tmp_path):
    assert cli_main(["models"]) == 0
    out = capsys.readouterr().out
    for alias in ("gpt-j-6b", "codegen-16b-mono", "qwen2.5-coder-32b", "santacoder"):
        assert alias in out
    assert cli_main(["models", "llama-2-7b", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["location"] == "meta-llama/Llama-2-7b-hf" and entry["bos"] == "auto"
    assert cli_main(["models", str(tmp_path / "nope")]) == 2
    assert "not a local directory" in capsys.readouterr().err


def test_an_alias_may_override_bos_only_with_a_reason():
    registry = parse_registry("families:\n  llama:\n    pad_token: unk\nmodels:\n  m:\n    hub_id: a/b\n"
                              "    family: llama\n    bos: none\n    reason: \"model card: trained without BOS\"\n")
    spec = resolve_model("m", registry)
    assert spec.bos == "none" and spec.reason.startswith("model card") and spec.pad_token == "unk"


def test_a_gguf_file_resolves_as_a_local_checkpoint(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    spec = resolve_model(str(path))
    assert spec.source == "local" and spec.gguf_file == "model.gguf" and spec.family is None
    with pytest.raises(EvalsuiteError, match="no such GGUF file"):
        resolve_model(str(tmp_path / "missing.gguf"))
