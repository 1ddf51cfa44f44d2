"""The leaderboard file's JSON Schema (``leaderboard.schema.json`` next to this module) and its versioning.

``schema_version`` is MAJOR.MINOR: a reader accepts any file of its own major version (minor versions only
add optional fields) and refuses another major with one line saying what to do.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.version import __version__

SCHEMA_VERSION = "1.7"
SCHEMA_PATH = Path(__file__).parent / "leaderboard.schema.json"
_VERSION = re.compile(r"[0-9]+\.[0-9]+")


@lru_cache(maxsize=1)
def validator():
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


def is_newer_minor(version: str) -> bool:
    if not _VERSION.fullmatch(version):
        return False
    major, minor = (int(part) for part in version.split("."))
    ours_major, ours_minor = (int(part) for part in SCHEMA_VERSION.split("."))
    return major == ours_major and minor > ours_minor


def check_version(document: Any, where: str) -> None:
    version = document.get("schema_version") if isinstance(document, dict) else None
    if isinstance(version, str) and _VERSION.fullmatch(version):
        if _major(version) > _major(SCHEMA_VERSION):
            raise EvalsuiteError(
                f"{where}: written with leaderboard schema {version}, newer than this evalsuite "
                f"({__version__}) reads (schema {SCHEMA_VERSION}); upgrade evalsuite")
        if _major(version) < _major(SCHEMA_VERSION):
            raise EvalsuiteError(f"{where}: leaderboard schema {version} is too old for this evalsuite "
                                 f"(schema {SCHEMA_VERSION}); regenerate it from the run records")


def check_schema(document: Any, where: str) -> None:
    """The version rule, then the JSON Schema; one line naming the file, the JSON path and the problem."""
    from jsonschema.exceptions import best_match

    check_version(document, where)
    error = best_match(validator().iter_errors(document))
    if error is not None:
        version = document.get("schema_version") if isinstance(document, dict) else None
        hint = (f"; the file is schema {version}, newer than this evalsuite's {SCHEMA_VERSION}: upgrade evalsuite"
                if isinstance(version, str) and is_newer_minor(version) else "")
        raise EvalsuiteError(f"{where}: invalid leaderboard at {error.json_path}: {error.message} "
                             f"(schema {SCHEMA_VERSION}{hint})")
