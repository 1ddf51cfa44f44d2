"""bigcode-evaluation-harness's own code, for the tests and benchmarks that compare evalsuite with it.

bigcode-evaluation-harness is not on PyPI, and its code is not copied into this repository: it is read from a
copy of its repository at the commit the comparisons were made against (:data:`BIGCODE_COMMIT`), either

* ``$EVALSUITE_BIGCODE_SOURCE``: a checkout (a folder holding ``bigcode_eval/`` and ``main.py``) or a git
  directory of github.com/bigcode-project/bigcode-evaluation-harness (``git clone --bare`` is enough), or
* the bare mirror the workplace's ``fetch`` tool leaves at :data:`DEFAULT_MIRROR`.

A git directory is exported once (``git archive``) into the test cache (``tests/real_models.py``'s
``cache_root()``). :func:`bigcode` imports the package from there as is, its ``bigcode_eval/tasks/__init__.py``
(every task) and ``main.py`` included, with one substitution: ``bigcode_eval.base.load_dataset`` (the hub
download every task's constructor makes) returns the local copies it is given, in the hub's layout
(``DatasetDict`` of splits), and fails as an offline hub would for any other dataset.
:class:`real_models.Unavailable` says why the code cannot be had; tests turn it into a skip.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Iterator, Mapping

from real_models import Unavailable, cache_lock, cache_root

BIGCODE_COMMIT = "8fc5bae6479c4fbbb28c3f8b644f6a15b3f3b5bd"
BIGCODE_COMMIT_SHORT = BIGCODE_COMMIT[:8]
DEFAULT_MIRROR = Path("/work/.mirror/bigcode-project+bigcode-evaluation-harness/repo")
# Where the MBPP rows come from here: the hub's full/test split, built by benchmarks/build_mbpp_data.py
MBPP_TEST_PARQUET = Path(__file__).resolve().parent / "data" / "mbpp" / "full" / "test-00000-of-00001.parquet"


def _is_checkout(path: Path) -> bool:
    return (path / "bigcode_eval" / "tasks" / "mbpp.py").is_file() and (path / "main.py").is_file()


def _resolve_commit(git_dir: Path) -> str:
    try:
        out = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "--verify",
                              f"{BIGCODE_COMMIT}^{{commit}}"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"git cannot read {git_dir}: {exc}") from None
    if out.returncode != 0:
        raise Unavailable(f"{git_dir} has no commit {BIGCODE_COMMIT_SHORT} of bigcode-evaluation-harness")
    return out.stdout.strip()


def bigcode_source() -> Path:
    """A folder holding bigcode-evaluation-harness's ``bigcode_eval/`` and ``main.py`` at :data:`BIGCODE_COMMIT`."""
    given = os.environ.get("EVALSUITE_BIGCODE_SOURCE")
    candidate = Path(given) if given else DEFAULT_MIRROR
    if _is_checkout(candidate):
        return candidate
    if not (candidate / "objects").is_dir() and not (candidate / ".git").exists():
        raise Unavailable(f"no bigcode-evaluation-harness source at {candidate} (set EVALSUITE_BIGCODE_SOURCE to a "
                          f"checkout or a git directory of github.com/bigcode-project/bigcode-evaluation-harness)")
    git_dir = candidate / ".git" if (candidate / ".git").exists() else candidate
    commit = _resolve_commit(git_dir)
    target = cache_root() / f"bigcode-evaluation-harness-{commit[:12]}"
    done = target / ".complete"
    if done.exists():
        return target
    with cache_lock():
        if done.exists():
            return target
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, "bigcode_eval", "main.py"],
                                 capture_output=True, timeout=300)
        if archive.returncode != 0:
            raise Unavailable(f"git archive of {git_dir} failed: {archive.stderr.decode()[-300:]}")
        untar = subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, capture_output=True, timeout=300)
        if untar.returncode != 0:
            raise Unavailable(f"cannot unpack bigcode-evaluation-harness into {target}")
        done.write_text(commit + "\n")
    return target


def mbpp_hub_copy(path: Path = MBPP_TEST_PARQUET):
    """What ``load_dataset("mbpp")`` gives bigcode's MBPP task: a DatasetDict whose ``test`` split is the hub's."""
    import datasets

    if not path.is_file():
        raise Unavailable(f"{path} is missing (benchmarks/build_mbpp_data.py writes it)")
    return datasets.DatasetDict({"test": datasets.Dataset.from_parquet(str(path))})


@contextlib.contextmanager
def bigcode(hub_copies: Mapping[str, Any]) -> Iterator[types.SimpleNamespace]:
    """bigcode-evaluation-harness imported from :func:`bigcode_source`; ``hub_copies`` maps a dataset path of the
    hub (``"mbpp"``, ``"evalplus/mbppplus"``) to what ``load_dataset`` returns for it. Yields the modules:
    ``tasks``, ``mbpp``, ``mbppplus``, ``base``, ``utils``, ``generation``, ``code_eval``, ``evaluator`` and
    ``main`` (``main.py``)."""
    try:
        import accelerate  # noqa: F401 - bigcode_eval.generation and main.py import it
    except ImportError as exc:
        raise Unavailable(f"bigcode-evaluation-harness needs accelerate: {exc}") from None
    root = bigcode_source()
    saved = {name: module for name, module in sys.modules.items()
             if name == "bigcode_eval" or name.startswith("bigcode_eval.")}
    for name in saved:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        try:
            base = importlib.import_module("bigcode_eval.base")
            modules = {name: importlib.import_module(f"bigcode_eval.{name}") for name in
                       ("tasks", "utils", "generation", "evaluator")}
        except ImportError as exc:  # a dependency of one of its tasks (tasks/__init__.py imports them all)
            raise Unavailable(f"bigcode-evaluation-harness cannot be imported here: {exc}") from None

        def load_dataset(path=None, name=None, **kwargs):  # the hub, offline, with the copies it was given
            if path in hub_copies and name is None:
                return hub_copies[path]
            raise ConnectionError(f"no local copy of the hub dataset {path!r} (config {name!r})")

        base.load_dataset = load_dataset
        modules["mbpp"] = importlib.import_module("bigcode_eval.tasks.mbpp")
        modules["mbppplus"] = importlib.import_module("bigcode_eval.tasks.mbppplus")
        modules["code_eval"] = importlib.import_module("bigcode_eval.tasks.custom_metrics.code_eval")
        spec = importlib.util.spec_from_file_location("bigcode_main", root / "main.py")
        main = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(main)
        yield types.SimpleNamespace(base=base, main=main, root=root, **modules)
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "bigcode_eval" or n.startswith("bigcode_eval.")]:
            del sys.modules[name]
        sys.modules.update(saved)


# -- how each side builds its prompts (no weights loaded) ------------------------------------------

def evalsuite_prompts(model: Path, task, problems, style: str, strip: bool) -> tuple[dict, dict]:
    """The prompt text and token ids evalsuite feeds for each problem (instruct: the chat text), through its own
    codec and asking (no weights loaded)."""
    from transformers import AutoTokenizer, GenerationConfig

    from evalsuite.generation.hf.tokenizer_fixes import prepare_codec
    from evalsuite.models.registry import resolve_model
    from evalsuite.protocol.asking import Asking
    from evalsuite.protocol.prompting import chat_prompt
    from evalsuite.records import GenerationRequest

    tokenizer = AutoTokenizer.from_pretrained(model)
    codec = prepare_codec(tokenizer, resolve_model(str(model)), None, GenerationConfig.from_pretrained(model))
    asking = Asking(style, strip_prompt=strip, opened_fence=style == "instruct")
    texts, ids = {}, {}
    for p in problems:
        prompt = asking.prompt_for(task, p)
        texts[p.task_id] = chat_prompt(tokenizer, prompt) if style == "instruct" else prompt
        ids[p.task_id] = codec.encode_request(GenerationRequest(p.task_id, prompt, (0,), prompt_style=style))
    return texts, ids


def evalplus_mbpp_prompts(model: Path, problems, decoder=None) -> dict:
    """What EvalPlus 0.3.1's ``codegen`` gives its decoder for each MBPP+ problem and what the decoder encodes:
    ``codegen.codegen`` itself runs, with ``get_mbpp_plus`` answering the rows evalsuite reads, and a decoder
    whose ``codegen`` records the prompt and turns it into text as ``HuggingFaceDecoder.codegen`` does (its own
    ``make_raw_chat_prompt`` with the tokenizer EvalPlus loads, ``use_fast=False``), without generating."""
    import evalplus.codegen as codegen
    from evalplus.provider.base import DecoderBase
    from evalplus.provider.utility import make_raw_chat_prompt
    from transformers import AutoTokenizer

    from evalsuite.protocol.prompting import INSTRUCTION_PREFIX, RESPONSE_PREFIX

    tokenizer = AutoTokenizer.from_pretrained(str(model), use_fast=False)  # provider/hf.py
    seen: list[str] = []

    class Recording(DecoderBase):
        def is_direct_completion(self) -> bool:  # provider/hf.py, force_base_prompt off
            return tokenizer.chat_template is None

        def codegen(self, prompt, do_sample=True, num_samples=200):
            seen.append(prompt)
            return [""]

    decoder = Recording(name=str(model), temperature=0.0, instruction_prefix=INSTRUCTION_PREFIX,
                        response_prefix=RESPONSE_PREFIX)
    rows = {p.task_id: {"task_id": p.task_id, "prompt": p.prompt, "entry_point": p.entry_point} for p in problems}
    shipped = codegen.get_mbpp_plus
    codegen.get_mbpp_plus = lambda version="default": rows
    try:
        with tempfile.TemporaryDirectory() as tmp:
            codegen.codegen(target_path=str(Path(tmp) / "samples.jsonl"), model=decoder, dataset="mbpp", greedy=True,
                            n_samples=1)
    finally:
        codegen.get_mbpp_plus = shipped
    texts = {}
    for tid, prompt in zip(rows, seen):
        texts[tid] = prompt if decoder.is_direct_completion() else make_raw_chat_prompt(
            prompt, INSTRUCTION_PREFIX, RESPONSE_PREFIX, tokenizer)
    return {"text": texts, "ids": {tid: tokenizer.encode(text) for tid, text in texts.items()},
            "direct_completion": decoder.is_direct_completion(), "codegen_prompt": dict(zip(rows, seen))}
