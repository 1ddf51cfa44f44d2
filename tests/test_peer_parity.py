"""In CI: batch invariance on a real checkpoint and a small fixed slice of the peer comparison.

The full comparison (40 problems per peer) is ``benchmarks/peer_parity.py`` (docs/benchmarks.md, "Parity
with the peers' own pipelines"). Here:

* greedy completions of SmolLM2-135M (float32, CPU) are the same at batch sizes 1 and 3 (mixed prompt
  lengths, so left padding, position ids and attention masks are exercised), with ``--engine
  transformers`` and with evalsuite's engine (``--engine evalsuite``, which runs it on the CPU too);
* the protocol text evalsuite follows is the peers' own: lm-eval 0.4.13's ``humaneval.yaml`` (fetched from
  PyPI like the evalplus wheel, tests/real_models.py) has evalsuite's prompt and stop sequences; the
  ``bigcode`` preset has bigcode's stop words and ``prompt.strip()``;
* where lm-eval is importable, its own ``HFLM.generate_until`` and evalsuite give the same completions
  on two problems of gemma-3-270m; where EvalPlus's codegen can run (``stop_sequencer``), its codegen and
  sanitizer give the same program as evalsuite on one SmolLM2 problem. Each skips cleanly otherwise.
"""

from __future__ import annotations

import importlib.util

import pytest

from evalsuite.generation import GenerationOptions, load_generator
from evalsuite.generation.options import HFOptions
from evalsuite.models.options import LoadingOptions
from evalsuite.records import GenerationRequest, SamplingParams
from evalsuite.tasks.discovery import TaskRegistry
from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def humaneval():
    return TaskRegistry.discover([]).get("humaneval")


@pytest.mark.parametrize("engine", ["transformers", "evalsuite"])
def test_greedy_completions_do_not_depend_on_the_batch(smollm2_path, humaneval, engine):
    problems = [humaneval.problems()[i] for i in (0, 2, 7)]  # 3 prompt lengths: padding in a batch of 3
    requests = [GenerationRequest(p.task_id, p.prompt, (0,), stop_sequences=DEFAULT_STOP_SEQUENCES) for p in problems]
    params = SamplingParams(max_new_tokens=12)
    texts = {}
    generator = load_generator(str(smollm2_path), GenerationOptions(loading=LoadingOptions(device="cpu"), hf=HFOptions(engine=engine, batch_size=1)))
    try:
        for size in (1, 3):
            generator.batch_size = size
            texts[size] = {c.task_id: c.raw_text for c in generator.generate(requests, params)}
        used = generator.describe()["engine"]
    finally:
        generator.close()
    assert texts[1] == texts[3] and len(texts[1]) == 3
    assert any(text.strip() for text in texts[1].values())
    if engine == "transformers":
        assert used == "transformers"


def test_lm_eval_task_yaml_is_evalsuites_protocol():
    """lm-eval 0.4.13's humaneval task: the prompt is the problem's prompt as is, and ``until`` is the
    Codex stop set evalsuite's HumanEval uses."""
    import yaml
    from real_models import Unavailable, fetch_wheel

    try:
        folder = fetch_wheel("lm-eval", "0.4.13")
    except Unavailable as exc:
        pytest.skip(str(exc))

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    config = yaml.load((folder / "lm_eval" / "tasks" / "humaneval" / "humaneval.yaml").read_text(), Loader=Loader)
    assert config["doc_to_text"] == "{{prompt}}" and config["num_fewshot"] == 0
    assert sorted(config["generation_kwargs"]["until"]) == sorted(DEFAULT_STOP_SEQUENCES)
    assert config["generation_kwargs"]["do_sample"] is False
    assert config["filter_list"][0]["filter"][0]["filter_fn"] == "utils.build_predictions"


def test_bigcode_preset_is_bigcodes_protocol():
    """bigcode_eval/tasks/humaneval.py: ``doc["prompt"].strip()`` and its stop words."""
    from evalsuite.protocol.presets import load_preset
    from evalsuite.protocol.prompting import base_prompt, completion_for_original

    preset = load_preset("bigcode")
    assert preset.prompt["stop_sequences"]["humaneval"] == ["\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif",
                                                            "\n```", "<file_sep>"]
    prompt = TaskRegistry.discover([]).get("humaneval").problems()[2].prompt
    assert prompt.startswith("\n") and base_prompt(prompt, True) == prompt.strip()
    assert prompt + completion_for_original(prompt, prompt.strip(), "\n    return 1") == prompt.rstrip() + "\n    return 1"


def test_lm_eval_generate_until_gives_evalsuites_completions(gemma_float32, humaneval):
    if importlib.util.find_spec("lm_eval") is None or importlib.util.find_spec("accelerate") is None:
        pytest.skip("lm-eval 0.4.13 (with accelerate) is not installed")
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    folder = gemma_float32
    problems = humaneval.problems()[:2]
    gen_kwargs = {"until": list(DEFAULT_STOP_SEQUENCES), "max_gen_toks": 16, "do_sample": False}
    lm = HFLM(pretrained=str(folder), dtype="float32", device="cpu", batch_size=1)
    theirs = lm.generate_until([Instance("generate_until", {"prompt": p.prompt}, (p.prompt, dict(gen_kwargs)), 0)
                                for p in problems], disable_tqdm=True)
    del lm
    generator = load_generator(str(folder), GenerationOptions(loading=LoadingOptions(device="cpu")))
    try:
        ours = {c.task_id: c.text for c in generator.generate(
            [GenerationRequest(p.task_id, p.prompt, (0,), stop_sequences=DEFAULT_STOP_SEQUENCES) for p in problems],
            SamplingParams(max_new_tokens=16))}
    finally:
        generator.close()
    assert [ours[p.task_id] for p in problems] == theirs


def test_evalplus_codegen_and_sanitizer_give_evalsuites_program(smollm2_float32, humaneval,
                                                               evalplus_module_path_or_installed):
    for module in ("evalplus", "stop_sequencer", "tree_sitter", "tree_sitter_python", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (EvalPlus's codegen needs it)")
    try:  # evalplus's own imports pull in more of its dependencies (tempdir, appdirs, ...)
        from evalplus.provider.hf import HuggingFaceDecoder
        from evalplus.sanitize import sanitize
    except ImportError as exc:
        pytest.skip(f"EvalPlus's codegen cannot be imported here: {exc}")

    from evalsuite.protocol.extraction import extract_program
    from evalsuite.protocol.presets import load_preset
    from evalsuite.protocol.prompting import INSTRUCTION_PREFIX, RESPONSE_PREFIX, chat_prompt

    folder = smollm2_float32
    problem = humaneval.problems()[0]
    decoder = HuggingFaceDecoder(name=str(folder), dataset="humaneval", batch_size=1, temperature=0.0,
                                 dtype="float32", instruction_prefix=INSTRUCTION_PREFIX,
                                 response_prefix=RESPONSE_PREFIX)
    decoder.max_new_tokens = 48
    [impl] = decoder.codegen(problem.prompt.strip() + "\n", do_sample=False, num_samples=1)
    del decoder
    generator = load_generator(str(folder), GenerationOptions(loading=LoadingOptions(device="cpu")))
    try:
        [completion] = generator.generate([GenerationRequest(problem.task_id, problem.prompt, (0,),
                                                             stop_sequences=tuple(load_preset("evalplus").prompt[
                                                                 "instruct_stop_sequences"]), prompt_style="instruct")],
                                          SamplingParams(max_new_tokens=48))
        assert chat_prompt(generator.codec.tokenizer, problem.prompt)  # the same text EvalPlus builds (test_prompting)
    finally:
        generator.close()
    assert impl.startswith(completion.text) or completion.text.startswith(impl)
    assert extract_program(completion.text, problem.entry_point, opened_fence=True) == \
        sanitize(impl, problem.entry_point)


def test_evalplus_direct_completion_gives_evalsuites_program(gemma_float32, humaneval,
                                                             evalplus_module_path_or_installed):
    """A base model under --preset evalplus: EvalPlus completes task["prompt"].strip() + "\\n", stops at its
    direct-completion set and sanitizes prompt + completion (evalplus/codegen.py). Its own decoder (forced to direct
    completion) and sanitizer against evalsuite's asking, on gemma-3-270m base, greedy, float32, on the CPU."""
    for module in ("evalplus", "stop_sequencer", "tree_sitter", "tree_sitter_python", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (EvalPlus's codegen needs it)")
    try:
        from evalplus.provider.hf import HuggingFaceDecoder
        from evalplus.sanitize import sanitize
    except ImportError as exc:
        pytest.skip(f"EvalPlus's codegen cannot be imported here: {exc}")

    import argparse

    from evalsuite.cli.run import protocol_from_args
    from evalsuite.protocol.asking import decide_asking
    from evalsuite.protocol.prompting import PromptDecision

    protocol = protocol_from_args(argparse.Namespace(preset="evalplus", prompt_style="base", strip_prompt=None))
    problems = [humaneval.problems()[i] for i in (0, 2)]
    decoder = HuggingFaceDecoder(name=str(gemma_float32), dataset="humaneval", batch_size=1, temperature=0.0,
                                 dtype="float32", force_base_prompt=True)
    decoder.max_new_tokens = 48
    theirs = [sanitize(p.prompt.strip() + "\n" + decoder.codegen(p.prompt.strip() + "\n", do_sample=False,
                                                                  num_samples=1)[0], p.entry_point)
              for p in problems]
    del decoder
    decision = PromptDecision(requested="base", style="base", reason="test")
    asking, stops = decide_asking(decision, False, humaneval, (), protocol.for_task("humaneval"))
    assert asking.direct_completion and "\nimport " in stops and "\n#" not in stops  # not the task's Codex set
    generator = load_generator(str(gemma_float32), GenerationOptions(loading=LoadingOptions(device="cpu")))
    try:
        requests = [GenerationRequest(p.task_id, asking.prompt_for(humaneval, p), (0,), stop_sequences=stops,
                                      prompt_style="base") for p in problems]
        completions = {c.task_id: c for c in generator.generate(requests, SamplingParams(max_new_tokens=48))}
    finally:
        generator.close()
    ours = [asking.completion_row(humaneval, p, completions[p.task_id].text, completions[p.task_id].raw_text)
            for p in problems]
    assert [row["completion"] for row in ours] == theirs
    assert all(row["whole_program"] for row in ours)
    assert all(f"def {p.entry_point}(" in program for p, program in zip(problems, theirs))
