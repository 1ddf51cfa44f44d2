"""Tasks whose problems are rows of a ``datasets`` dataset, described by a small spec instead of code.

One :class:`DatasetSpec` says where the rows come from (a hub id at a pinned revision, or a local file), how a
row becomes a prompt (a ``str.format`` template over the row's fields), where the stop sequences, tests,
canonical solution and entry point are, and which of three test styles the dataset uses:

* ``check``: HumanEval's, the test defines ``check(candidate)`` (a trailing ``check(name)`` call, as in
  EvalPlus's hub copy, is dropped: evalsuite makes that call itself);
* ``asserts``: MBPP's, assert lines that call the function by name (``assert remove_Occ("hello","l") == "heo"``);
* ``script``: MBPP+'s, top-level test code that calls the function by name.

Every style becomes the same trusted program: optional setup code (imports, MBPP's ``test_setup_code``), then a
``def check(candidate):`` whose body binds the entry point's name to ``candidate`` before the original test
code; the sandbox runs ``check(<entry point>)``. So the tests reach the function under test only through the
``candidate`` argument, which works both when the test shares the sample's namespace and when it runs in a
process of its own that passes the entry point in.

The built-in ``mbpp``, ``mbpp-sanitized``, ``mbpp-plus`` and ``humaneval-plus`` tasks are specs; so are the
tasks users add as YAML files (:mod:`evalsuite.tasks.specs`).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.tasks.datasets_loader import HubSource, load_task_dataset
from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES, Problem, Program, Task

TEST_STYLES = ("check", "asserts", "script")
_TRAILING_CHECK = re.compile(r"\ncheck\([ \t]*[A-Za-z_]\w*[ \t]*\)\s*\Z")  # a top-level call, last
_CHECK_TEMPLATE = "def {name}(candidate):\n    pass\n"


@dataclass(frozen=True)
class DatasetSpec:
    """Everything that turns a dataset's rows into evalsuite problems (see the module docstring)."""

    name: str
    description: str
    prompt_template: str  # str.format over the row: "{prompt}" or '"""\n{text}\n{test_list[0]}\n"""\n'
    test_field: str  # a string, or a list of strings joined by newlines (MBPP's test_list)
    test_style: str = "check"  # one of TEST_STYLES
    hub: HubSource | None = None  # where the authors publish the data; None: only a local file
    data_path: Path | None = None  # a default local file or folder (declarative specs); --task-data overrides
    split: str = "test"  # the split a local file stands for
    stop_sequences: tuple[str, ...] = DEFAULT_STOP_SEQUENCES
    id_field: str = "task_id"
    id_prefix: str = ""  # e.g. "Mbpp/": MBPP's ids are integers, EvalPlus names them Mbpp/<id>
    entry_point_field: str | None = None  # None: the first function the tests call that the solution defines
    solution_field: str | None = None  # the canonical solution: the reference model, selfcheck, timeouts
    setup_fields: tuple[str, ...] = ()  # trusted code run before the tests (strings or lists of lines)
    citation: str = ""  # where the protocol (prompt, stops, tests) comes from
    # rows of the hub revision's split: a --task-data copy with fewer is a part of the benchmark (labelled partial)
    problem_count: int | None = None

    def __post_init__(self) -> None:
        if self.test_style not in TEST_STYLES:
            raise EvalsuiteError(f"task {self.name!r}: test style must be one of {', '.join(TEST_STYLES)}, "
                                 f"got {self.test_style!r}")
        if self.test_style == "check" and not self.entry_point_field:  # such tests call `candidate` only
            raise EvalsuiteError(f"task {self.name!r}: 'check' style tests need an entry point field")
        fields = [f for _, f, _, _ in string.Formatter().parse(self.prompt_template) if f]
        if not fields:
            raise EvalsuiteError(f"task {self.name!r}: the prompt template uses no field of the data")


# -- test programs ---------------------------------------------------------------------------------------

def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "\n".join(str(v) for v in value)
    return str(value)


def called_names(source: str) -> list[str]:
    """Names called as functions in ``source``, in source order, without repeats."""
    found: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_Call(self, node: ast.Call) -> None:
            if isinstance(node.func, ast.Name) and node.func.id not in found:
                found.append(node.func.id)
            self.generic_visit(node)

    Visitor().visit(ast.parse(source))
    return found


def defined_names(source: str) -> list[str]:
    """Top-level functions and classes that ``source`` defines."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def entry_point_from_tests(tests: str, solution: str | None) -> str | None:
    """The function the tests exercise: the first one they call that the solution defines, else the first one
    they call that is neither a builtin nor defined by the tests themselves (MBPP has no entry_point field)."""
    calls = called_names(tests)
    if solution:
        defined = set(defined_names(solution))
        for name in calls:
            if name in defined:
                return name
    own = set(defined_names(tests))
    for name in calls:
        if name not in own and not hasattr(builtins, name):
            return name
    return None


def check_function_name(tests: str, entry_point: str) -> str:
    """The name of the generated test function: ``check``, unless the function under test or the tests use that
    name (MBPP's problems 56 and 349 test a function called ``check``: a wrapper of the same name would replace
    it), then ``check_``, ``check__``..."""
    taken = {entry_point, *called_names(tests), *defined_names(tests)}
    name = "check"
    while name in taken:
        name += "_"
    return name


def wrap_in_check(tests: str, entry_point: str, name: str = "check") -> str:
    """``tests`` (code that calls ``entry_point`` by name) as the body of ``def check(candidate)`` (``name``).

    Rebuilt through the AST rather than by indenting text, so multi-line string literals keep their exact
    value; imports stay at module level (``from m import *`` is not allowed inside a function)."""
    tree = ast.parse(tests)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    body = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    function = ast.parse(_CHECK_TEMPLATE.format(name=name)).body[0]
    assert isinstance(function, ast.FunctionDef)  # the template is one function
    bind = ast.parse(f"{entry_point} = candidate").body[0]
    function.body = [bind, *body]
    module = ast.Module(body=[*imports, function], type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(module)) + "\n"


def build_test_program(style: str, tests: str, setup: str, entry_point: str, name: str = "check") -> str:
    """The trusted test code for one problem: setup, then a ``check(candidate)`` function (``name``: its name
    where the tests are wrapped, :func:`check_function_name`)."""
    if style == "check":
        body = _TRAILING_CHECK.sub("\n", tests)  # EvalPlus's hub copy ends with check(<entry point>)
    else:
        body = wrap_in_check(tests, entry_point, name)
    return f"{setup.rstrip()}\n\n{body}" if setup.strip() else body


# -- the task --------------------------------------------------------------------------------------------

class DatasetTask(Task):
    """A task defined by a :class:`DatasetSpec`; its rows load lazily through :mod:`evalsuite.tasks.datasets_loader`."""

    def __init__(self, spec: DatasetSpec):
        super().__init__(name=spec.name, description=spec.description, stop_sequences=spec.stop_sequences)
        self.spec = spec
        self.problem_count = spec.problem_count
        self.data_path: Path | None = spec.data_path  # `--task-data NAME=PATH` sets it
        self._provenance: dict[str, Any] = {}
        self.source = spec.hub.describe() if spec.hub else (str(spec.data_path) if spec.data_path else "")

    def load_problems(self) -> list[Problem]:
        spec = self.spec
        loaded = load_task_dataset(spec.name, spec.hub, self.data_path, split=None if spec.hub else spec.split)
        self.dataset_sha256 = loaded.sha256
        self.source = loaded.source
        self._provenance = {**loaded.provenance, "spec": self.spec_record()}
        problems = [self.problem_from_row(index, row) for index, row in enumerate(loaded.rows)]
        seen: set[str] = set()
        for problem in problems:
            if problem.task_id in seen:
                raise EvalsuiteError(f"task {spec.name!r}: task id {problem.task_id!r} appears twice")
            seen.add(problem.task_id)
        return problems

    def problem_from_row(self, index: int, row: dict[str, Any]) -> Problem:
        spec = self.spec
        where = f"task {spec.name!r}, row {index}"
        needed = [spec.id_field, spec.test_field] + [f for f in (spec.entry_point_field, spec.solution_field) if f]
        # `datasets` gives a row without a field the others have that field as None: missing too
        missing = [name for name in needed if row.get(name) is None]
        if missing:
            present = sorted(name for name, value in row.items() if value is not None)
            raise EvalsuiteError(f"{where}: missing field(s) {', '.join(missing)}; it has {', '.join(present)}")
        task_id = f"{spec.id_prefix}{row[spec.id_field]}"
        where = f"task {spec.name!r}, {task_id}"
        try:
            prompt = spec.prompt_template.format_map(row)
        except (KeyError, IndexError, AttributeError, ValueError, TypeError) as exc:
            raise EvalsuiteError(f"{where}: prompt template {spec.prompt_template!r} does not fit the row "
                                 f"({type(exc).__name__}: {exc}); fields: {', '.join(sorted(row))}") from None
        solution = _as_text(row.get(spec.solution_field)) if spec.solution_field else None
        tests = _as_text(row[spec.test_field])
        if not _has_statements(tests):
            raise EvalsuiteError(f"{where}: its test field {spec.test_field!r} holds no test: every answer would "
                                 "pass it")
        setup = "\n".join(_as_text(row.get(name)) for name in spec.setup_fields if row.get(name))
        try:
            if spec.entry_point_field:
                entry_point = str(row[spec.entry_point_field])
            else:
                entry_point = entry_point_from_tests(tests, solution) or ""
            if not entry_point.isidentifier():
                raise EvalsuiteError(f"{where}: cannot tell which function the tests call (entry point "
                                     f"{entry_point!r}); name it with an entry point field")
            check_name = "check" if spec.test_style == "check" else check_function_name(tests, entry_point)
            if never_calls_the_candidate(tests, spec.test_style, entry_point):
                raise EvalsuiteError(f"{where}: its test never calls {entry_point}: every answer would pass it")
            test = build_test_program(spec.test_style, tests, setup, entry_point, check_name)
        except SyntaxError as exc:
            raise EvalsuiteError(f"{where}: the test code does not parse: {exc.msg} (line {exc.lineno})") from None
        extra: dict[str, Any] = {"row": index}
        if check_name != "check":
            extra["check_function"] = check_name
        return Problem(task_id=task_id, prompt=prompt, test=test, entry_point=entry_point,
                       canonical_solution=solution, extra=extra)

    def build_program(self, problem: Problem, completion: str) -> Program:
        program = super().build_program(problem, completion)
        name = problem.extra.get("check_function")
        if name:
            program = dataclasses.replace(program, check=f"{name}({problem.entry_point})")
        if self.spec.test_style == "check":  # the dataset's own check function
            return program
        # asserts or a script, wrapped here: module code in bigcode's one-module program (Program.wrapper)
        return dataclasses.replace(program, wrapper=name or "check")

    # -- what the record says --------------------------------------------------------------------------
    @property
    def prompt_template(self) -> str:
        return self.spec.prompt_template

    def spec_record(self) -> dict[str, Any]:
        spec = self.spec
        return {"prompt_template": spec.prompt_template, "test_field": spec.test_field,
                "test_style": spec.test_style, "setup_fields": list(spec.setup_fields),
                "entry_point_field": spec.entry_point_field, "solution_field": spec.solution_field,
                "id_field": spec.id_field, "id_prefix": spec.id_prefix, "citation": spec.citation}

    def provenance(self) -> dict[str, Any]:
        self.problems()
        return dict(self._provenance)


def never_calls_the_candidate(tests: str, style: str, entry_point: str, check_name: str = "check") -> bool:
    """Whether ``tests`` can never look at an answer: a check function (``check`` style) that never names its
    parameter, or asserts that never name the entry point. Every answer passed such a test (``return None`` too),
    and selfcheck said PASS. Text that does not parse, or has no such function, is left to the later checks."""
    try:
        tree = _without_dead_code(ast.parse(tests))
    except SyntaxError:
        return False

    def names_any(scope: ast.AST, names: set[str]) -> bool:  # by name, or in a string (globals()[...], eval)
        return any(isinstance(node, ast.Name) and node.id in names
                   or isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and any(name in node.value for name in names) for node in ast.walk(scope))

    if style != "check":
        return not names_any(tree, {entry_point})
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == check_name and node.args.args:
            return not names_any(node, {node.args.args[0].arg, entry_point})
    return False


class _DeadCode(ast.NodeTransformer):
    """Drops what can never run: the body of ``if``/``while`` on a false constant (``if False:``, ``while 0:``),
    and the statements after a ``return``, ``raise``, ``break`` or ``continue`` in the same block. A call to the
    candidate there (red-team round 11: ``if False: candidate()``, a call after ``return``) looks at no answer."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                for index, statement in enumerate(block):
                    if isinstance(statement, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
                        del block[index + 1:]
                        break
        return node

    def _false_constant_test(self, node: ast.If | ast.While) -> Any:
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant) and not node.test.value:
            return node.orelse or ast.Pass()
        return node

    visit_If = visit_While = _false_constant_test


def _without_dead_code(tree: ast.Module) -> ast.Module:
    return _DeadCode().visit(tree)


def _has_statements(tests: str) -> bool:
    """Whether ``tests`` holds a statement that can fail: not empty, not only comments, ``pass`` or bare strings
    (an empty test field, "" or [], passed every answer). Text that does not parse is left to the test's own
    SyntaxError report."""
    try:
        body = ast.parse(tests).body
    except SyntaxError:
        return True
    return any(not isinstance(node, ast.Pass)
               and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)
