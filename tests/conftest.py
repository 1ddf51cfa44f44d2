"""Shared pytest fixtures.

``tiny_model_dir(family)`` gives the directory of a tiny random-weight checkpoint of a real architecture
with a family-faithful tokenizer (see ``tests/tiny_models.py``), built once per session. Other test
modules can also ``from tiny_models import make_tiny_model, FAMILIES`` directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from tiny_models import make_tiny_model


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
