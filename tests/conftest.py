"""Shared pytest fixtures.

``tiny_model_dir(family)`` gives the directory of a tiny random-weight checkpoint of a real architecture
with a family-faithful tokenizer (see ``tests/tiny_models.py``), built once per session. Other test
modules can also ``from tiny_models import make_tiny_model, FAMILIES`` directly.
"""

from __future__ import annotations

import os

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
