"""In CI: MBPP as the peers ask it, against the peers' own code, on the real MBPP data.

The full comparison on a real model (prompts, completions, programs, verdicts on 40 problems of gemma-3-270m) is
``benchmarks/peer_parity.py --part mbpp`` / ``--part mbpp-evalplus`` (docs/benchmarks.md, "MBPP against the
peers' own code"). Here, in seconds:

* ``--preset bigcode``: the prompt of every one of MBPP's 500 test problems is what bigcode-evaluation-harness's
  own ``MBPP.get_prompt`` returns (unstripped, unlike HumanEval's), the program a completion becomes is what its
  ``postprocess_generation`` makes of the decoded sequence, the verdicts on a set of programs are those of its
  ``compute_code_eval``, MBPP+'s prompt is its ``MBPPPlus.get_prompt``'s, and (with the gemma checkpoint) the
  prompt token ids are its ``TokenizedDataset``'s. bigcode's code is read from its repository
  (``tests/peer_sources.py``); without it these skip.
* ``--preset evalplus``: mbpp-plus prompts are what EvalPlus 0.3.1's ``codegen`` gives a base model and, through
  its ``make_raw_chat_prompt``, a chat model (SmolLM2-135M-Instruct's template), text and token ids.

The data: ``tests/data/mbpp/full/test-00000-of-00001.parquet``, the hub's ``full`` test split
(``benchmarks/build_mbpp_data.py``; its source and checks are in tests/data/mbpp/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.jsonl import read_jsonl
from evalsuite.protocol.asking import Asking, decide_asking
from evalsuite.protocol.prompting import PromptDecision
from evalsuite.tasks.discovery import TaskRegistry
from evalsuite.tasks.task import truncate_at_stop
from sandbox import detect_isolation

import peer_sources
from real_models import Unavailable

ROOT = Path(__file__).resolve().parents[1]
MBPP = peer_sources.MBPP_TEST_PARQUET
MBPP_PLUS_ROWS = Path(__file__).parent / "data" / "datasets" / "mbppplus_test.jsonl"
needs_sandbox = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")


def preset(name: str, task: str):
    import argparse

    from evalsuite.cli.run import protocol_from_args

    return protocol_from_args(argparse.Namespace(preset=name, prompt_style=None, strip_prompt=None)).for_task(task)


@pytest.fixture(scope="module")
def mbpp():
    task = TaskRegistry.discover([]).get("mbpp")
    task.data_path = MBPP
    task.problems()
    return task


@pytest.fixture(scope="module")
def bigcode():
    try:
        with peer_sources.bigcode({"mbpp": peer_sources.mbpp_hub_copy(),
                                   "evalplus/mbppplus": _mbppplus_hub_copy()}) as modules:
            yield modules
    except Unavailable as exc:
        pytest.skip(str(exc))


def tokenizer_folder(gguf: Path) -> Path:
    """The checkpoint's tokenizer and configs (no weights) as a transformers folder, converted from the GGUF once
    into the test model cache (gemma's 262k-token vocabulary takes ~20 s to convert)."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    from real_models import cache_lock, cache_root

    folder = cache_root() / "tokenizers" / f"{gguf.parent.name}-{gguf.stem}"
    done = folder / ".complete"
    if not done.exists():
        with cache_lock():
            if not done.exists():
                AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(folder)
                config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
                config.save_pretrained(folder)
                GenerationConfig.from_model_config(config).save_pretrained(folder)
                done.touch()
    return folder


def _mbppplus_hub_copy():
    import datasets

    rows = [{k: v for k, v in json.loads(line).items() if k != "inputs"}
            for line in MBPP_PLUS_ROWS.read_text().splitlines()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def test_the_data_is_the_hubs_full_test_split(mbpp):
    """500 problems, task ids 11..510 in the hub's order; the content hash benchmarks/build_mbpp_data.py printed."""
    problems = mbpp.problems()
    assert [p.task_id for p in problems] == [f"Mbpp/{i}" for i in range(11, 511)]
    assert mbpp.dataset_sha256 == "632cfe86fd513fab6d66c6b212ec2670ac3023ea7511872a63809b39b48ffc19"


def test_bigcode_preset_strips_humaneval_prompts_only():
    assert preset("bigcode", "humaneval").strip_prompt and preset("bigcode", "humaneval-plus").strip_prompt
    assert not preset("bigcode", "mbpp").strip_prompt and not preset("bigcode", "mbpp-plus").strip_prompt
    assert preset("bigcode", "mbpp").stops_for("mbpp") == ()  # MBPP's own stops are bigcode's


def test_bigcode_preset_prompts_are_bigcodes_get_prompt_for_all_500(mbpp, bigcode):
    task = bigcode.tasks.get_task("mbpp")
    dataset = task.get_dataset()  # bigcode asserts the 500 rows of the hub's test split
    asking = Asking("base", strip_prompt=preset("bigcode", "mbpp").strip_prompt)
    problems = mbpp.problems()
    assert [f"Mbpp/{doc['task_id']}" for doc in dataset] == [p.task_id for p in problems]
    assert [asking.prompt_for(mbpp, p) for p in problems] == [task.get_prompt(doc) for doc in dataset]
    assert problems[0].prompt.endswith('"""\n')  # the final newline bigcode keeps


def test_bigcode_preset_programs_are_bigcodes_postprocess_generation(mbpp, bigcode):
    """What evalsuite runs for a raw completion (its generator cuts at the run's stops, then the task's
    postprocess) against what bigcode's postprocess_generation makes of the decoded prompt + generation."""
    task = bigcode.tasks.get_task("mbpp")
    problems = mbpp.problems()
    protocol = preset("bigcode", "mbpp")
    asking, stops = decide_asking(PromptDecision("base", "base", "requested"), False, mbpp, (), protocol)
    assert set(stops) == set(task.stop_words)  # bigcode adds the EOS text; evalsuite stops at the EOS token
    generations = [
        "def remove_Occ(s, ch):\n    return s.replace(ch, '')\n\nassert remove_Occ('hello', 'l') == 'heo'\n",
        'def f(x):\n    """doc"""\n    return x\n"""\nmore',
        "def f(x):\n    return x\nif __name__ == '__main__':\n    print(f(1))",
        "def f(x):\n    return x\n\n\nprint(f(1))\nclass A: pass",
        "import math\ndef f(x):\n    return math.sqrt(x)\n```\nthe end",
        "def f(x):\n  return x\n<|/ file |>",
        "\n\n",
        "",
        "def f(x):\n    return [i for i in x\n           if i]\n",
    ]
    for index, generation in enumerate(generations):
        problem = problems[index]
        prompt = asking.prompt_for(mbpp, problem)
        text = truncate_at_stop(generation, stops)  # what evalsuite's generator returns beside the raw text
        row = asking.completion_row(mbpp, problem, text, generation)
        ours = problem.prompt + row["completion"]
        assert ours == task.postprocess_generation(prompt + generation, index), (index, generation)


@needs_sandbox
def test_bigcode_preset_verdicts_are_bigcodes_compute_code_eval(mbpp, bigcode, tmp_path, monkeypatch):
    """Canonical solutions (Mbpp/56 and /349 test a function named ``check``; /367's setup code uses the
    solution's class, which bigcode never runs and evalsuite's checker cannot see), wrong answers, a syntax error,
    a missing function, a renamed one, an exception, ``exit()``: the same verdicts from bigcode's own checker."""
    problems = {p.task_id: p for p in mbpp.problems()}
    task = bigcode.tasks.get_task("mbpp")
    dataset = task.get_dataset()
    index = {f"Mbpp/{doc['task_id']}": i for i, doc in enumerate(dataset)}

    def canonical(tid):
        return problems[tid].canonical_solution

    samples = [(tid, canonical(tid)) for tid in ("Mbpp/11", "Mbpp/12", "Mbpp/13", "Mbpp/56", "Mbpp/349", "Mbpp/367")]
    samples += [
        ("Mbpp/11", "def remove_Occ(s, ch):\n    return s.replace(ch, '', 1)"),  # the first occurrence only
        ("Mbpp/14", "def find_Volume(l, b, h):\n    return l * b * h"),
        ("Mbpp/17", "def square_perimeter(a):\n    return 4 * a"),
        ("Mbpp/17", "def square_perimeter(a)\n    return 4 * a"),
        ("Mbpp/17", "def perimeter(a):\n    return 4 * a"),
        ("Mbpp/17", "def square_perimeter(a):\n    raise ValueError(a)"),
        ("Mbpp/17", "def square_perimeter(a):\n    exit()"),
        ("Mbpp/19", "def test_duplicate(nums):\n    return len(nums) != len(set(nums))"),
        ("Mbpp/56", "def check(n):\n    return n == 2 * int(str(n)[::-1]) - 1"),  # the right answer too
        # bigcode's asserts name the function at each call (one module): a rebinding counts (the twenty-third
        # session's parity round; bound once, the first passed and the second failed)
        ("Mbpp/11", "def remove_Occ(s, ch):\n    global remove_Occ\n    remove_Occ = lambda s, ch: ''\n"
                    "    s = s.replace(ch, '', 1)\n    i = s.rfind(ch)\n    return s if i < 0 else s[:i] + s[i + 1:]"),
        ("Mbpp/11", "def _right(s, ch):\n    s = s.replace(ch, '', 1)\n    i = s.rfind(ch)\n"
                    "    return s if i < 0 else s[:i] + s[i + 1:]\n\n_setup = iter([True])\n\n"
                    "def remove_Occ(s, ch):\n    global remove_Occ\n    if next(_setup, False):\n"
                    "        remove_Occ = _right\n        return _right(s, ch)\n    return ''"),
        # a dict's items() or keys() where the test compares with a set: equal as sets (red-team round 21: failed
        # here as non-plain values)
        ("Mbpp/490", "def extract_symmetric(test_list):\n    pairs = {}\n    for a, b in test_list:\n"
                     "        if (b, a) in test_list and a < b:\n            pairs[a] = b\n    return pairs.items()"),
        ("Mbpp/473", "def tuple_intersection(test_list1, test_list2):\n"
                     "    second = {tuple(sorted(t)) for t in test_list2}\n    seen = {}\n    for t in test_list1:\n"
                     "        key = tuple(sorted(t))\n        if key in second:\n            seen[key] = True\n"
                     "    return seen.keys()"),
    ]
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")
    references = [task.get_reference(dataset[index[tid]]) for tid, _ in samples]
    programs = [[task.get_prompt(dataset[index[tid]]) + code] for tid, code in samples]
    _, results = bigcode.code_eval.compute_code_eval(predictions=programs, references=references, k=[1])
    theirs = [results[i][0][1]["passed"] for i in range(len(samples))]

    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": tid, "completion": code}) + "\n" for tid, code in samples))
    out = tmp_path / "out"
    assert main(["evaluate", str(path), "--task", "mbpp", "--task-data", f"mbpp={MBPP}", "--k", "1", "--output",
                 str(out), "--quiet"]) == 0
    ours = [row["passed"] for _, row in read_jsonl(next(out.rglob("results.jsonl")))]
    assert ours == theirs
    assert theirs == [True] * 5 + [False, False, False, True, False, False, False, False, True, True, False, True,
                                   True, True]


def test_bigcode_preset_mbpp_plus_prompts_are_bigcodes_mbppplus_get_prompt(bigcode):
    """bigcode_eval/tasks/mbppplus.py on rows in the hub copy's format (evalplus/mbppplus: ``prompt`` and
    ``test_list``), against evalsuite's mbpp-plus task under the preset (bigcode's protocol for it)."""
    task = bigcode.tasks.get_task("mbppplus")
    dataset = task.get_dataset()
    ours = TaskRegistry.discover([]).get("mbpp-plus")
    ours.data_path = MBPP_PLUS_ROWS
    asking = Asking("base", strip_prompt=preset("bigcode", "mbpp-plus").strip_prompt)
    assert [asking.prompt_for(ours, p) for p in ours.problems()] == [task.get_prompt(doc) for doc in dataset]


def test_bigcode_preset_prompt_tokens_are_bigcodes_tokenized_dataset(mbpp, bigcode, gemma_path):
    """gemma-3-270m's tokenizer (from the real checkpoint): evalsuite's codec against bigcode's own
    TokenizedDataset with main.py's tokenizer settings, on the first 40 problems."""
    from transformers import AutoTokenizer, GenerationConfig

    from evalsuite.generation.hf.tokenizer_fixes import prepare_codec
    from evalsuite.models.registry import resolve_model
    from evalsuite.records import GenerationRequest

    folder = tokenizer_folder(gemma_path)
    tokenizer = AutoTokenizer.from_pretrained(folder, truncation_side="left", padding_side="right")
    tokenizer.pad_token = tokenizer.eos_token  # main.py
    task = bigcode.tasks.get_task("mbpp")
    n = 40
    theirs = [item["ids"][: int(item["input_len"])].tolist() for item in bigcode.utils.TokenizedDataset(
        task, task.get_dataset(), tokenizer, num_devices=1, max_length=512, n_tasks=n, n_copies=1, prefix="")]
    codec = prepare_codec(AutoTokenizer.from_pretrained(folder), resolve_model(str(gemma_path)), None,
                          GenerationConfig())
    asking = Asking("base", strip_prompt=preset("bigcode", "mbpp").strip_prompt)
    ours = [codec.encode_request(GenerationRequest(p.task_id, asking.prompt_for(mbpp, p), (0,)))
            for p in mbpp.problems()[:n]]
    assert ours == theirs
    stripped = [codec.encode(asking.prompt_for(mbpp, p).strip()) for p in mbpp.problems()[:n]]
    assert sum(a == b for a, b in zip(stripped, theirs)) < n  # what a preset that strips every task would feed


def test_evalplus_preset_mbpp_plus_prompts_are_evalplus_codegens(smollm2_path, evalplus_module_path_or_installed):
    """EvalPlus 0.3.1's codegen itself on the first 10 MBPP+ problems of evalsuite's data file: its base prompt
    (``prompt.strip() + "\\n"``) and, through its make_raw_chat_prompt with SmolLM2-135M-Instruct's tokenizer, its
    chat prompt, against evalsuite's under --preset evalplus."""
    try:
        import evalplus.codegen  # noqa: F401
        from evalplus.provider.utility import make_raw_chat_prompt  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"EvalPlus's codegen cannot be imported here: {exc}")
    import peer_sources
    from evalsuite.tasks.evalplus_tasks import for_evaluation

    smol = tokenizer_folder(smollm2_path)  # what EvalPlus's HuggingFaceDecoder reads its tokenizer from
    task = for_evaluation(TaskRegistry.discover([]).get("mbpp-plus"), "evalplus")
    problems = task.problems()[:10]
    protocol = preset("evalplus", "mbpp-plus")
    peer = peer_sources.evalplus_mbpp_prompts(smol, problems)
    assert not peer["direct_completion"]
    texts, ids = peer_sources.evalsuite_prompts(smol, task, problems, "instruct", protocol.strip_prompt)
    assert texts == peer["text"] and ids == peer["ids"]
    # a base model (no chat template): EvalPlus completes prompt.strip() + "\n", evalsuite its base prompt
    base = Asking("base", strip_prompt=protocol.strip_prompt)
    assert {p.task_id: base.prompt_for(task, p) for p in problems} == peer["codegen_prompt"]
