"""Failing fast: sandbox availability, output folders, sizes and --fail-under metrics are checked
before any model loads, each as one line (acceptance 3: bubblewrap missing fails in under 5 s)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.cli import main


def run_cli(args: list[str], cwd: Path, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "evalsuite", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)
    return proc, time.perf_counter() - started


def test_run_without_bubblewrap_fails_in_under_5_s_before_loading_the_model(tiny_model_dir, tmp_path):
    """PATH without bubblewrap (only the interpreter's folder): the sandbox check fails first, in one line."""
    model = tiny_model_dir("gpt2")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python")
    env = {**os.environ, "PATH": str(bin_dir)}
    proc, seconds = run_cli(["run", "--models", str(model), "--limit", "1", "--max-new-tokens", "4",
                             "--output", str(tmp_path / "runs"), "--leaderboard-dir", str(tmp_path / "lb")],
                            tmp_path, env)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("warning: --limit")]
    assert len(errors) == 1 and errors[0].startswith("error: cannot isolate sample execution: bubblewrap is not "
                                                     "installed"), proc.stderr
    assert "Loading weights" not in proc.stderr and "Traceback" not in proc.stderr
    assert not list((tmp_path / "runs").glob("*/record.json"))  # no run was started
    assert seconds < 5.0, f"took {seconds:.1f} s"
    print(f"fail-fast without bubblewrap: {seconds:.2f} s")


@pytest.mark.parametrize("flag,value", [("--output", "/proc/nope"), ("--leaderboard-dir", "/proc/lb")])
def test_unwritable_folders_fail_in_one_line_before_the_run(tmp_path, capsys, flag, value):
    args = ["run", "--limit", "1", "--quiet", "--output", str(tmp_path / "runs"),
            "--leaderboard-dir", str(tmp_path / "lb"), flag, value]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: {flag} {value}: cannot create or write there") and len(err) <= 2
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("command", [["run", "--limit", "1"], ["plan", "--models", "gpt-j-6b"]])
def test_a_size_without_a_unit_is_refused(tmp_path, capsys, command):
    assert main([*command, "--gpu-memory", "16", *(["--output", str(tmp_path)] if command[0] == "run" else [])]) != 0
    err = capsys.readouterr().err
    assert "--gpu-memory: '16' has no unit; write 16GiB (binary) or 16GB (decimal)" in err


@pytest.mark.parametrize("extra,message", [
    (["--k", "1", "--fail-under", "pass@3=0.5"], "--fail-under pass@3: this run reports only pass@1 (--k)"),
    (["--fail-under", "pass@1=0.5", "--no-leaderboard"], "--fail-under needs the leaderboard"),
])
def test_fail_under_metrics_are_checked_before_the_run(tmp_path, capsys, extra, message):
    assert main(["run", "--limit", "1", "--quiet", "--output", str(tmp_path / "runs"),
                 "--leaderboard-dir", str(tmp_path / "lb"), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_unknown_fail_under_metric_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--fail-under", "accuracy=0.5"])
    assert exc.value.code == 2 and "pass@1=0.30" in capsys.readouterr().err


def test_a_size_is_parsed_once_and_keeps_the_users_text():
    """``--gpu-memory`` becomes bytes where the options are made; records and keys still show what was written."""
    import json
    import pickle

    from evalsuite.errors import EvalsuiteError
    from evalsuite.models.options import LoadingOptions
    from evalsuite.planner.capacity import parse_size
    from evalsuite.sizes import ByteSize

    options = LoadingOptions(gpu_memory="16GiB", cpu_memory="100GB")
    assert isinstance(options.gpu_memory, ByteSize) and options.gpu_memory.bytes == 16 * 1024**3
    assert options.cpu_memory is not None and options.cpu_memory.bytes == 100 * 1000**3
    assert options.to_dict()["gpu_memory"] == "16GiB" and json.dumps(options.to_dict()["gpu_memory"]) == '"16GiB"'
    assert parse_size(options.gpu_memory) == 16 * 1024**3
    assert pickle.loads(pickle.dumps(options)) == options  # as ranks exchange it
    with pytest.raises(EvalsuiteError, match="--cpu-memory: cannot read 'lots' as a size"):
        LoadingOptions(cpu_memory="lots")


@pytest.mark.parametrize("values,message", [
    ({"n": 0}, "--n must be at least 1, got 0"), ({"max_new_tokens": 0}, "--max-new-tokens must be at least 1"),
    ({"top_k": -1}, "--top-k must be >= 0"), ({"top_p": 0.0}, "--top-p in (0, 1]"),
    ({"temperature": -0.1}, "--temperature must be a finite number >= 0 (got -0.1)"), ({"max_length": 1}, "--max-length must be >= 2")])
def test_sampling_params_refuse_what_cannot_be_sampled_whoever_builds_them(values, message):
    """One check, in SamplingParams itself: the flags, a preset and the Python API all meet it."""
    from evalsuite.errors import EvalsuiteError
    from evalsuite.records import SamplingParams

    with pytest.raises(EvalsuiteError) as refused:
        SamplingParams(**values)
    assert message in str(refused.value)


def test_instruct_without_a_chat_template_is_refused_before_any_weights_load(tiny_model_dir, tmp_path):
    """``--prompt-style instruct`` on a model whose tokenizer has no chat template: one line naming the model,
    exit 2, before the first model of the command loads (it used to come after that model's weights)."""
    import json
    import shutil

    chatty = tmp_path / "chatty"
    shutil.copytree(tiny_model_dir("gpt2"), chatty)
    settings = json.loads((chatty / "tokenizer_config.json").read_text())
    settings["chat_template"] = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    (chatty / "tokenizer_config.json").write_text(json.dumps(settings))
    plain = tiny_model_dir("qwen2")
    proc, _ = run_cli(["run", "--models", f"{chatty},{plain}", "--prompt-style", "instruct", "--limit", "1",
                       "--max-new-tokens", "4", "--output", str(tmp_path / "runs"),
                       "--leaderboard-dir", str(tmp_path / "lb")], tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("warning: --limit")]
    assert errors == [f"error: {plain}: --prompt-style instruct needs a chat template, and this model's tokenizer "
                      "has none; use --prompt-style base"], proc.stderr
    assert "Loading weights" not in proc.stderr and not (tmp_path / "runs").exists()


def test_a_model_that_needs_its_own_code_says_which_flag_runs_it(tiny_model_dir, tmp_path):
    """An architecture only the checkpoint's own Python code defines (config.json's auto_map): one line that names
    the flag, not transformers' paragraph."""
    import json
    import shutil

    folder = tmp_path / "custom"
    shutil.copytree(tiny_model_dir("gpt2"), folder)
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "custom-architecture"  # no class of transformers' own: only the repository's code
    config["auto_map"] = {"AutoConfig": "configuration_custom.CustomConfig",
                          "AutoModelForCausalLM": "modeling_custom.CustomLM"}
    (folder / "config.json").write_text(json.dumps(config))
    proc, _ = run_cli(["run", "--models", str(folder), "--limit", "1", "--max-new-tokens", "4",
                       "--output", str(tmp_path / "runs"), "--leaderboard-dir", str(tmp_path / "lb")], tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("warning: --limit")]
    assert len(errors) == 1 and errors[0].endswith("it needs its repository's own Python code, which evalsuite "
                                                   "runs only with --trust-remote-code (read that code first)"), errors
    assert "Loading weights" not in proc.stderr and "Traceback" not in proc.stderr
