"""Presets fill sampling settings; explicit flags win; bad names are one clear line."""

from __future__ import annotations

import argparse

import pytest

from evalsuite.cli.run import sampling_from_args
from evalsuite.errors import EvalsuiteError
from evalsuite.protocol.presets import list_presets


def args(**given):
    base = dict(preset=None, n=None, k=None, temperature=None, top_p=None, top_k=None, max_new_tokens=None, max_length=None,
                seed=0)
    base.update(given)
    return argparse.Namespace(**base)


def test_codex_preset_and_override():
    sampling, ks = sampling_from_args(args(preset="codex-pass100"))
    assert (sampling.n, sampling.temperature, sampling.top_p, ks) == (200, 0.8, 0.95, [1, 10, 100])
    sampling, ks = sampling_from_args(args(preset="codex-pass100", n=50, k="1,10"))
    assert (sampling.n, sampling.temperature, ks) == (50, 0.8, [1, 10])


def test_defaults_are_greedy_pass_at_1():
    sampling, ks = sampling_from_args(args())
    assert (sampling.n, sampling.temperature, sampling.max_new_tokens, ks) == (1, 0.0, 512, [1])
    assert sampling_from_args(args(n=20, temperature=0.8))[1] == [1, 10]


def test_bigcode_preset_counts_the_prompt_in_its_512_and_a_flag_wins():
    assert sampling_from_args(args(preset="bigcode"))[0].max_length == 512
    assert sampling_from_args(args(preset="bigcode", max_length=300))[0].max_length == 300
    assert sampling_from_args(args())[0].max_length is None


def test_max_length_is_refused_where_the_prompt_cannot_be_counted():
    from evalsuite.generation.options import GenerationOptions, OpenAIOptions
    from evalsuite.records import SamplingParams
    from evalsuite.runs.config import RunConfig, validate_config

    server = GenerationOptions(openai=OpenAIOptions(base_url="http://localhost:8000/v1"))
    with pytest.raises(EvalsuiteError, match="--max-length needs a model loaded here"):
        validate_config(RunConfig(models=["m"], tasks=[], sampling=SamplingParams(max_length=512), ks=[1],
                                  generation=server))
    with pytest.raises(EvalsuiteError, match="--max-length must be >= 2"):
        validate_config(RunConfig(models=["m"], tasks=[], sampling=SamplingParams(max_length=1), ks=[1]))


def test_unknown_preset_lists_known_ones():
    with pytest.raises(EvalsuiteError, match="unknown preset 'nope'; known presets: .*codex-pass1"):
        sampling_from_args(args(preset="nope"))
    assert {p.name for p in list_presets()} >= {"codex-pass1", "codex-pass100", "greedy"}


def test_bigcode_preset_carries_bigcode_stop_words_and_stripping_for_humaneval_only():
    """bigcode_eval/tasks/humaneval.py's stop words, added to HumanEval's and HumanEval+'s own for base
    style; their prompts stripped, MBPP's not (bigcode_eval/tasks/mbpp.py); --strip-prompt: every task."""
    from evalsuite.cli.run import protocol_from_args

    protocol = protocol_from_args(argparse.Namespace(preset="bigcode", prompt_style=None, strip_prompt=None))
    assert protocol.strip_prompt and protocol.style == "base"
    stops = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\n```", "<file_sep>")
    assert protocol.stops_for("humaneval") == stops and protocol.stops_for("humaneval-plus") == stops
    assert protocol.stops_for("mbpp") == ()
    assert [protocol.for_task(t).strip_prompt for t in ("humaneval", "humaneval-plus", "mbpp", "mbpp-plus", "mine")] \
        == [True, True, False, False, False]
    flag = protocol_from_args(argparse.Namespace(preset="bigcode", prompt_style=None, strip_prompt=True))
    assert flag.for_task("mbpp").strip_prompt
    assert not protocol_from_args(argparse.Namespace(preset="bigcode", prompt_style=None,
                                                     strip_prompt=False)).for_task("humaneval").strip_prompt
    assert protocol_from_args(argparse.Namespace(preset="evalplus", prompt_style=None, strip_prompt=None)).task_stops == ()


def test_evalplus_preset_stops_instruct_answers_where_evalplus_does():
    """EvalPlus 0.3.1's hf decoder stops a chat model's answer at its EOS list plus "\\n```\\n"
    (evalplus/provider/utility.py, provider/hf.py); the evalplus preset uses that set for instruct runs (issue
    21: with evalsuite's plain fence stop, an answer ran past "\\ndef main(" and sanitized differently)."""
    import ast as python_ast

    from real_models import Unavailable, fetch_wheel

    from evalsuite.cli.run import protocol_from_args
    from evalsuite.protocol.asking import decide_asking
    from evalsuite.protocol.prompting import PromptDecision
    from evalsuite.tasks.discovery import TaskRegistry

    try:
        folder = fetch_wheel("evalplus", "0.3.1")
    except Unavailable as exc:
        pytest.skip(str(exc))
    provider = folder / "evalplus" / "provider"
    module = python_ast.parse((provider / "utility.py").read_text())
    eos = next(python_ast.literal_eval(node.value) for node in module.body
               if isinstance(node, python_ast.Assign) and node.targets[0].id == "EOS")
    hf = python_ast.parse((provider / "hf.py").read_text())
    chat_extra = [python_ast.literal_eval(node.value) for node in python_ast.walk(hf)
                  if isinstance(node, python_ast.AugAssign) and python_ast.unparse(node.target) == "self.eos"
                  and isinstance(node.value, python_ast.List)]
    assert chat_extra == [["\n```\n"]]

    task = TaskRegistry.discover([]).get("humaneval")
    instruct = PromptDecision("auto", "instruct", "the tokenizer has a chat template")
    evalplus = protocol_from_args(argparse.Namespace(preset="evalplus", prompt_style=None, strip_prompt=None))
    assert evalplus.instruct_stops == tuple(eos + chat_extra[0])
    assert decide_asking(instruct, True, task, ("<|im_end|>",), evalplus)[1] == (*eos, "\n```\n", "<|im_end|>")
    plain = protocol_from_args(argparse.Namespace(preset=None, prompt_style=None, strip_prompt=None))
    assert decide_asking(instruct, True, task, ("<|im_end|>",), plain)[1] == ("\n```", "<|im_end|>")
