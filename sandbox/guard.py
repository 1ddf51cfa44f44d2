"""In-process guards that keep a sample from faking a pass. Runs inside the jail; stdlib only.

Three guards, each closing one family of tricks:

* :func:`instrument_test` rewrites the trusted test code so every value it compares, asserts on, or
  gets back from ``candidate(...)`` must be a *plain* built-in value (:func:`make_plain_check`). An
  object whose ``__eq__`` always returns True, a ``str`` subclass, or a number with a rigged
  ``__abs__`` is reported as ``non_plain_value`` and the sample fails.
* :func:`make_audit_hook` refuses, for the untrusted code, the interpreter features that would let it
  reach the runner's frames or memory (frame introspection, tracing, ``gc`` referrer walks, importing ``ctypes``,
  ``/proc/*/mem``). CPython audit hooks cannot be removed once added.
* The runner gives the test code a copy of ``builtins`` taken before the candidate ran, so
  monkeypatching ``builtins`` changes nothing the test sees.
"""

from __future__ import annotations

import ast
import collections
from typing import Any, Callable

PLAIN_CHECK_NAME = "__evalsuite_plain__"
# Hack detections a verdict may carry; the summary counts them.
KNOWN_FLAGS = frozenset({"non_plain_value", "patched_module", "channel_tampered", "introspection_refused"})
ASSERT_CHECK_NAME = "__evalsuite_plain_truth__"

# Exact types whose comparison and truth are implemented in C and cannot be overridden by a sample.
PLAIN_SCALARS = frozenset({int, float, complex, bool, str, bytes, type(None), type(Ellipsis)})
PLAIN_SEQUENCES = frozenset({list, tuple, set, frozenset, range})
PLAIN_MAPPINGS = frozenset({dict, collections.OrderedDict, collections.defaultdict})
# Pure-Python stdlib containers a correct solution may return; accepted only while their class
# dictionary is exactly what it was before the sample ran (Counter.__eq__ = lambda *a: True is caught).
CHECKED_PY_CLASSES = (collections.Counter,)


class NonPlainValue(BaseException):
    """Raised inside the test when a non-plain value reaches a comparison. A BaseException so that a
    test's own ``except Exception`` cannot swallow it."""


def make_plain_check() -> tuple[Callable[[Any], Any], Callable[[Any], Any], list[str]]:
    """Build (plain, plain_truth, detections) bound to values captured now, before any sample runs."""
    scalars, sequences, mappings = PLAIN_SCALARS, PLAIN_SEQUENCES, PLAIN_MAPPINGS
    class_snapshots = {cls: dict(vars(cls)) for cls in CHECKED_PY_CLASSES}
    _type, _id, _len, _bool = type, id, len, bool
    detections: list[str] = []

    def class_intact(cls: type) -> bool:
        snapshot = class_snapshots[cls]
        current = vars(cls)
        return _len(current) == _len(snapshot) and all(current.get(k) is v for k, v in snapshot.items())

    def plain(value: Any) -> Any:
        stack = [value]
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            kind = _type(item)
            if kind in scalars:
                continue
            if _id(item) in seen:
                continue
            if kind in sequences:
                seen.add(_id(item))
                if kind is not range:
                    stack.extend(item)
            elif kind in mappings or (kind in class_snapshots and class_intact(kind)):
                seen.add(_id(item))
                stack.extend(dict.keys(item))
                stack.extend(dict.values(item))
            else:
                detections.append("non_plain_value")
                raise NonPlainValue(f"non-plain value of type {kind.__name__!s:.40}")
        return value

    def plain_truth(value: Any) -> bool:
        return _bool(plain(value))

    return plain, plain_truth, detections


class _Instrument(ast.NodeTransformer):
    """Wrap every comparison operand, assert condition and ``candidate(...)`` call in a plain check."""

    def __init__(self, candidate_names: frozenset[str]):
        self.candidate_names = candidate_names

    @staticmethod
    def _wrap(node: ast.expr, name: str = PLAIN_CHECK_NAME) -> ast.expr:
        return ast.copy_location(ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[node], keywords=[]), node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        node.left = self._wrap(node.left)
        node.comparators = [self._wrap(c) for c in node.comparators]
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.candidate_names:
            return self._wrap(node)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        self.generic_visit(node)
        node.test = self._wrap(node.test, ASSERT_CHECK_NAME)
        return node


def instrument_test(source: str, filename: str, candidate_names: frozenset[str] = frozenset({"candidate"})):
    """Compile trusted test code with plain-value checks inserted (see module docstring)."""
    tree = _Instrument(candidate_names).visit(ast.parse(source, filename=filename))
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec")


def imported_modules(source: str) -> list[str]:
    """Top-level names of the modules a test imports, so the server can import them before any sample."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


# Frame-bearing attributes whose reads raise the "object.__getattr__" audit event.
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_REFUSED_MODULES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend"})
_REFUSED_EVENTS = frozenset({
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
    "gc.get_referrers", "gc.get_referents", "gc.get_objects",
})


def make_audit_hook(is_active: Callable[[], bool], refused_log: list[str]) -> Callable[[str, tuple], None]:
    """An audit hook that refuses introspection while ``is_active()`` (that is, while untrusted code runs).

    Each refusal is appended to ``refused_log`` (counted as ``introspection_refused`` when the sample fails).

    It raises ValueError for frame access because that is what the stdlib already tolerates there
    (``collections.namedtuple``, ``typing``, ``logging`` fall back gracefully).
    """
    refused, frame_attributes, refused_modules = _REFUSED_EVENTS, _FRAME_ATTRIBUTES, _REFUSED_MODULES
    _str, _isinstance, log = str, isinstance, refused_log.append

    def hook(event: str, args: tuple) -> None:
        if not is_active():
            return
        if event in refused:
            if event != "sys._getframe":  # the stdlib asks for frames too (enum, typing): refused, not flagged
                log(event)
            raise ValueError(f"{event} is not available in the evalsuite sandbox")
        if event == "object.__getattr__" and len(args) == 2 and args[1] in frame_attributes:
            log(event)
            raise ValueError("frame access is not available in the evalsuite sandbox")
        if event == "import" and args and _isinstance(args[0], _str) and args[0].partition(".")[0] in refused_modules:
            log(event)
            raise ImportError(f"{args[0]} is not available in the evalsuite sandbox")
        if event.startswith("ctypes."):
            log(event)
            raise PermissionError("ctypes is not available in the evalsuite sandbox")
        if event == "open" and args and _isinstance(args[0], (_str, bytes)):
            path = args[0] if _isinstance(args[0], _str) else args[0].decode("utf-8", "replace")
            if path.startswith("/proc/") and (path.endswith("/mem") or "/map_files" in path):
                log(event)
                raise PermissionError("process memory is not readable in the evalsuite sandbox")

    return hook
