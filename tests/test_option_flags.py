"""Flags generated from option dataclasses: one definition, the default shown, shared by run, plan and models."""

import pytest

from evalsuite.cli import build_parser
from evalsuite.cli.option_groups import options_from_args
from evalsuite.errors import EvalsuiteError
from evalsuite.execution.timeouts import TimeoutPolicy
from evalsuite.generation.options import GenerationOptions
from evalsuite.models.options import LoadingOptions


def parse(*argv):
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize("command", [["run"], ["plan", "--models", "gpt2"], ["models"]])
def test_dtype_is_one_flag_with_the_same_choices_everywhere(command):
    assert options_from_args(LoadingOptions, parse(*command, "--dtype", "float16"),
                             only=("dtype",)).dtype == "float16"
    assert options_from_args(LoadingOptions, parse(*command, "--dtype", "auto"), only=("dtype",)).dtype is None
    with pytest.raises(SystemExit):
        parse(*command, "--dtype", "int3")


@pytest.mark.parametrize("command", ["run", "plan", "models"])
def test_every_flag_of_the_model_commands_shows_its_default(command, capsys):
    with pytest.raises(SystemExit):
        parse(command, "--help")
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--dtype", "--revision"):
        entry = text.split(flag, 2)[-1].split(" --", 1)[0]
        assert "default" in entry, (flag, entry)


def test_timeout_flags_fill_one_policy_and_keep_their_checks():
    policy = options_from_args(TimeoutPolicy, parse("run", "--timeout", "5"))
    assert policy.fixed_s == 5 and policy.fallback_s == 5 and not policy.calibrated
    assert TimeoutPolicy().fallback_s == 3.0
    with pytest.raises(EvalsuiteError, match=r"--timeout-floor must be positive and at most 86400 \(a day\), got -1"):
        options_from_args(TimeoutPolicy, parse("run", "--timeout-floor", "-1"))


def test_generation_options_record_the_keys_they_always_had():
    """Part of the resume key: the split must not change it."""
    assert set(GenerationOptions().to_dict()) == {
        "backend", "device", "dtype", "batch_size", "base_url", "api_key_env", "concurrency", "trust_remote_code",
        "strategy", "gpu_memory", "cpu_memory", "offload_dir", "threads", "engine", "max_new_tokens", "max_retries",
        "request_timeout_s", "samples_per_request", "revision"}
