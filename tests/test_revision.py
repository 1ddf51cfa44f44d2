"""``--revision`` for hub models: the value reaches every from_pretrained and hub lookup, is part of the
run's identity (another revision never resumes into the same run), and is refused in one line for a local
folder, a GGUF file or the reference model, before any model loads. No hub here: the hub calls are spied on and
served from a tiny local checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalsuite.cli import main
from evalsuite.errors import EvalsuiteError
from evalsuite.generation.hf.loading import pretrained_args
from evalsuite.models.registry import resolve_model
from sandbox import detect_isolation

HUB_ID = "acme/tiny-coder"


def test_the_spec_carries_the_revision_to_from_pretrained():
    spec = resolve_model("gpt-j-6b", revision="v1.0")
    assert spec.revision == "v1.0" and pretrained_args(spec) == (spec.location, {"revision": "v1.0"})
    assert pretrained_args(resolve_model("gpt-j-6b")) == (resolve_model("gpt-j-6b").location, {})
    assert resolve_model(HUB_ID, revision="abc123").revision == "abc123"


@pytest.fixture
def hub_served_by(monkeypatch):
    """Every hub lookup of ``HUB_ID`` answered from a local folder; returns the calls seen, with their revision."""
    import transformers

    from evalsuite.generation.hf import loading

    calls: list[tuple[str, str, str | None]] = []

    def serve(folder: Path):
        for cls in (transformers.AutoConfig, transformers.AutoTokenizer, transformers.AutoModelForCausalLM,
                    transformers.GenerationConfig):
            original = cls.from_pretrained

            def spy(location, *args, _original=original, _name=cls.__name__, **kwargs):
                if location != HUB_ID:
                    return _original(location, *args, **kwargs)
                calls.append((_name, location, kwargs.pop("revision", None)))
                return _original(str(folder), *args, **kwargs)

            monkeypatch.setattr(cls, "from_pretrained", spy)
        monkeypatch.setattr(loading, "check_hub_reachable",
                            lambda spec: calls.append(("check_hub_reachable", spec.location, spec.revision)))
        return calls

    return serve


@pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")
def test_run_loads_the_revision_and_keys_the_run_by_it(tiny_model_dir, hub_served_by, tmp_path, capsys):
    calls = hub_served_by(tiny_model_dir("gpt2"))
    output = tmp_path / "runs"

    def run(revision: str) -> dict:
        assert main(["run", "--models", HUB_ID, "--revision", revision, "--limit", "2", "--max-new-tokens", "4",
                     "--device", "cpu", "--quiet", "--no-leaderboard", "--output", str(output), "--json"]) == 0
        (result,) = json.loads(capsys.readouterr().out)["results"]
        return json.loads(Path(result["record"]).read_text())

    first = run("v1")
    loaded = {name for name, location, revision in calls}
    assert {"check_hub_reachable", "AutoConfig", "AutoTokenizer", "AutoModelForCausalLM"} <= loaded
    assert {revision for _, _, revision in calls} == {"v1"}  # every lookup asked for it
    assert first["identity"]["revision"] == "v1" and first["model"]["requested_revision"] == "v1"
    assert first["model"]["display_name"] == f"{HUB_ID}@v1"
    assert first["generation_options"]["revision"] == "v1"

    calls.clear()
    second = run("v2")
    assert {revision for _, _, revision in calls} == {"v2"}
    assert second["run_id"] != first["run_id"] and second["generation_stats"]["completions_resumed"] == 0
    again = run("v1")  # the same revision resumes its own run
    assert again["run_id"] == first["run_id"] and again["generation_stats"]["completions_generated_now"] == 0
    assert len(list(output.iterdir())) == 2


def test_the_planner_loads_and_looks_up_the_revision(monkeypatch):
    import transformers

    from evalsuite.planner import loaders, source

    seen = []
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda model_id, **kwargs: seen.append((model_id, kwargs.get("revision")))
                        or (SimpleNamespace(eval=lambda: None), {}))
    plan = SimpleNamespace(strategy="cpu", dtype="float32", device_map=None, capacity=SimpleNamespace(offload_dir=None))
    loaders._load("org/model", plan, SimpleNamespace(gpu_dtype="bfloat16"), False, "v3")
    loaders._load("org/model", plan, SimpleNamespace(gpu_dtype="bfloat16"), False)
    assert seen == [("org/model", "v3"), ("org/model", None)]

    looked_up = []
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained",
                        lambda model_id, **kwargs: looked_up.append((model_id, kwargs.get("revision"))) or None)
    found = source.resolve_source("gpt-j-6b", resolve_model("gpt-j-6b", revision="v3"))  # bundled config after
    assert looked_up == [(found.model_id, "v3")] and found.revision == "v3"


def test_plan_and_models_take_the_revision(monkeypatch, capsys):
    from evalsuite.planner import source

    asked = []
    monkeypatch.setattr(source, "_cached_hub_config",
                        lambda hub_id, trust, revision=None: asked.append((hub_id, revision)) or None)
    assert main(["plan", "--models", "gpt-j-6b", "--revision", "v2", "--gpus", "1", "--gpu-memory", "16GiB",
                 "--cpu-memory", "64GiB", "--json"]) == 0
    assert asked == [("EleutherAI/gpt-j-6b", "v2")]
    capsys.readouterr()
    assert main(["models", "gpt-j-6b", "--revision", "v2", "--json"]) == 0  # not cached: the spec is shown
    assert json.loads(capsys.readouterr().out)[0]["revision"] == "v2"


@pytest.mark.parametrize("command, kind", [(command, kind) for command in ("run", "plan", "models")
                                           for kind in ("folder", "gguf", "reference")
                                           if (command, kind) != ("plan", "reference")])  # plan has no reference
def test_a_revision_without_a_hub_model_is_one_line_before_any_model_loads(command, kind, tiny_model_dir, tmp_path,
                                                                          monkeypatch, capsys, request):
    import evalsuite.generation

    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(evalsuite.generation, "load_generator", no_loading)
    model = {"folder": str(tiny_model_dir("gpt2")), "reference": "reference"}.get(kind)
    if kind == "gguf":
        model = str(tmp_path / "model.gguf")
        Path(model).write_bytes(request.getfixturevalue("smollm2_path").read_bytes())  # a whole, real GGUF
    argv = {"run": ["run", "--models", model, "--output", str(tmp_path / "runs"), "--no-leaderboard"],
            "plan": ["plan", "--models", model], "models": ["models", model]}[command]
    assert main([*argv, "--revision", "main"]) == 2
    captured = capsys.readouterr()
    what = {"folder": "a local folder", "gguf": "a local GGUF file", "reference": "the built-in reference model"}[kind]
    assert captured.err == (f"error: --revision main: {model} is {what}, which has no hub revisions; "
                            "--revision applies to hub models (aliases and hub ids) only\n")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_empty_revision_is_refused():
    with pytest.raises(EvalsuiteError, match="--revision expects"):
        resolve_model("gpt-j-6b", revision=" ")
