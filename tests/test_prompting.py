"""The instruct prompt is EvalPlus's, checked against the installed (unpacked) ``evalplus`` 0.3.1 package:
its wording (evalplus/codegen.py) and its chat construction (evalplus/provider/utility.py), for real
tokenizers with chat templates; and the style decision follows EvalPlus's rule."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from evalsuite.protocol import prompting
from tiny_models import humaneval_prompts
from tokenizer_mimics import build


@pytest.fixture(scope="module")
def evalplus(evalplus_module_path):
    from evalplus.provider.utility import make_raw_chat_prompt

    source = Path(importlib.util.find_spec("evalplus.codegen").origin).read_text(encoding="utf-8")
    return make_raw_chat_prompt, source


@pytest.fixture(scope="module")
def smollm2_tokenizer(smollm2_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_path.parent, gguf_file=smollm2_path.name)


def test_our_wording_is_evalplus_default_wording(evalplus):
    _, source = evalplus
    instruction = re.search(r'^    instruction_prefix = "([^"]+)"', source, re.MULTILINE).group(1)
    response = re.search(r'^    response_prefix = "([^"]+)"', source, re.MULTILINE).group(1)
    assert (prompting.INSTRUCTION_PREFIX, prompting.RESPONSE_PREFIX) == (instruction, response)


def _check_same_text(tokenizer, make_raw_chat_prompt, count: int = 8) -> None:
    for task_id, prompt in humaneval_prompts()[:count]:
        # evalplus/codegen.py passes task["prompt"].strip() + "\n" to the decoder, which calls this
        theirs = make_raw_chat_prompt(prompt.strip() + "\n", prompting.INSTRUCTION_PREFIX,
                                      prompting.RESPONSE_PREFIX, tokenizer)
        assert prompting.chat_prompt(tokenizer, prompt) == theirs, task_id
        assert theirs.endswith("```python\n")


def test_smollm2_instruct_prompt_equals_evalplus(evalplus, smollm2_tokenizer):
    _check_same_text(smollm2_tokenizer, evalplus[0])


@pytest.mark.parametrize("mimic", ["qwen2-instruct", "llama3-instruct"])
def test_other_templates_give_evalplus_text_too(evalplus, mimic):
    _check_same_text(build(mimic), evalplus[0], count=3)


@pytest.mark.parametrize("mimic", ["qwen2", "starcoder"])
def test_no_template_means_base_as_in_evalplus(evalplus, mimic):
    tokenizer = build(mimic)
    prompt = humaneval_prompts()[0][1]
    assert evalplus[0](prompt, "x", "y", tokenizer) == prompt  # EvalPlus: direct completion
    assert prompting.decide_style("auto", tokenizer.chat_template).style == "base"
    with pytest.raises(Exception, match="needs a chat template"):
        prompting.chat_prompt(tokenizer, prompt)


def test_style_decisions_are_explained():
    auto = prompting.decide_style("auto", "{{ messages }}")
    assert auto.style == "instruct" and auto.chat_template_sha256 and "chat template" in auto.reason
    assert prompting.decide_style("base", "{{ messages }}").style == "base"
    assert prompting.decide_style("instruct", None, can_chat=True).style == "instruct"
    with pytest.raises(Exception, match="needs a chat template"):
        prompting.decide_style("instruct", None)
    with pytest.raises(Exception, match="--prompt-style must be one of"):
        prompting.PromptProtocol(style="chat")


def test_server_message_is_evalplus_openai_message(evalplus_module_path):
    """evalplus/provider/openai.py builds `instruction_prefix + f"\\n```python\\n{prompt.strip()}\\n```"`."""
    source = (evalplus_module_path / "evalplus" / "provider" / "openai.py").read_text(encoding="utf-8")
    assert 'self.instruction_prefix + f"\\n```python\\n{prompt.strip()}\\n```"' in source
    prompt = humaneval_prompts()[0][1]
    [message] = prompting.server_messages(prompt)
    assert message == {"role": "user",
                       "content": prompting.INSTRUCTION_PREFIX + f"\n```python\n{prompt.strip()}\n```"}


def test_end_of_turn_is_found_from_the_template(smollm2_tokenizer):
    assert prompting.end_of_turn_ids(smollm2_tokenizer) == {smollm2_tokenizer.convert_tokens_to_ids("<|im_end|>")}
    qwen = build("qwen2-instruct")
    assert prompting.end_of_turn_ids(qwen) == {qwen.convert_tokens_to_ids("<|im_end|>")}
    assert prompting.end_of_turn_ids(build("starcoder")) == frozenset()
