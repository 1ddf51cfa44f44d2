"""The layout, checked from the source: the import graph (every ``import``, also those inside functions, read with
``ast``, so that nothing is run) has no cycle between modules or between stage packages, and no import runs in a
direction the pipeline forbids (declared below, as data). The ``evalsuite/`` root holds only the plugin contract
and shared leaf modules."""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("evalsuite", "sandbox")  # the top-level packages of this repository

# The evalsuite/ root: the plugin contract and shared leaf modules, which import no stage package; and the package's
# face (__init__: the Python API, handing on to the commands), which nothing inside evalsuite imports.
ROOT_MODULES = {"__init__", "__main__", "hookspecs", "version", "errors", "records", "jsonl", "environment", "progress",
                "devices", "seeding", "flags", "hub", "untrusted", "sizes", "registry", "signals"}
FACES = {"evalsuite", "evalsuite.__main__"}  # entry points for users, above every stage
STAGES = ("cli", "runs", "tasks", "protocol", "models", "generation", "engine", "planner", "execution", "scoring",
          "reporting", "configs")

# The forbidden directions: a module under any of ``importers`` never imports one under any of ``imported``.
@dataclass(frozen=True)
class Rule:
    importers: tuple[str, ...]
    imported: tuple[str, ...]
    why: str


def _stages(*names: str) -> tuple[str, ...]:
    return tuple(f"evalsuite.{name}" for name in names)


REPORTING_DATA = _stages("reporting.model", "reporting.entries", "reporting.labels", "reporting.store", "reporting.gate")
FORBIDDEN = [
    Rule(_stages("engine"), _stages("generation"), "the engine is a library; generation/hf drives it, never the reverse"),
    Rule(("sandbox",), ("evalsuite",), "the sandbox is a package of its own: it must stay importable without evalsuite"),
    Rule(_stages("scoring"), _stages("reporting", "execution"),
         "scoring counts verdicts: it knows neither how they were made nor how they are shown"),
    Rule(REPORTING_DATA, _stages("reporting.views", "reporting.publish"),
         "storage and entries do not render: the pages are drawn from them"),
    Rule(_stages("reporting.views"), _stages("reporting.store", "reporting.publish"),
         "a view draws the entries it is given"),
    Rule(_stages("tasks", "execution"), _stages("generation"), "tasks and execution do not know which model answers"),
    Rule(_stages(*(stage for stage in STAGES if stage != "cli")), _stages("cli"),
         "the commands sit on top: no stage imports them"),
    Rule(_stages("tasks", "protocol", "models", "generation", "engine", "planner", "execution", "scoring", "reporting"),
         _stages("runs"), "only the commands drive a run"),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {_module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _resolve(name: str, modules: set[str]) -> str | None:
    """The repository's module that ``name`` names (itself, or the nearest package above it), or None."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking_block(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:``: imports for annotations only, never run (the way to name a type without a cycle)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(module: str, path: Path, modules: set[str]) -> set[str]:
    """The repository's modules that ``module`` imports anywhere in its source, functions included (relative imports
    resolved; those under ``if TYPE_CHECKING:`` left out)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = {id(node) for block in ast.walk(tree) if _is_type_checking_block(block)
                   for statement in block.body for node in ast.walk(statement)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target
                     for alias in node.names]
        else:
            continue
        found.update(resolved for name in names if (resolved := _resolve(name, modules)) and resolved != module)
    return found


def import_graph() -> dict[str, set[str]]:
    sources = _sources()
    modules = set(sources)
    return {module: imports_of(module, path, modules) for module, path in sources.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def stage_of(module: str) -> str:
    """``evalsuite.runs.pipeline`` -> ``evalsuite.runs``; a root module is its own node; ``sandbox.*`` -> ``sandbox``."""
    parts = module.split(".")
    if parts[0] == "evalsuite" and len(parts) > 1 and parts[1] in STAGES:
        return ".".join(parts[:2])
    return module if parts[0] == "evalsuite" else parts[0]


def stage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    stages: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        stages[stage_of(module)].update(stage_of(t) for t in targets if stage_of(t) != stage_of(module))
    return dict(stages)


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def forbidden_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{module} -> {target}: {rule.why}" for module, targets in sorted(graph.items())
            for target in sorted(targets) for rule in FORBIDDEN
            if any(_under(module, p) for p in rule.importers) and any(_under(target, p) for p in rule.imported)]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_graph_is_read_from_every_module(graph):
    """A reader that found nothing would pass every check below."""
    assert len(graph) > 100
    assert "evalsuite.reporting.store" in graph["evalsuite.reporting.publish"]
    assert "evalsuite.reporting.labels" in graph["evalsuite.runs.pipeline"]  # an import inside a function
    assert "sandbox.jail" in graph["sandbox.pool"]


def test_no_import_cycle_between_modules(graph):
    assert cycles(graph) == []


def test_no_import_cycle_between_stage_packages(graph):
    assert cycles(stage_graph(graph)) == []


def test_no_forbidden_direction(graph):
    assert forbidden_imports(graph) == []


def test_root_holds_only_the_contract_and_leaf_modules(graph):
    root = {path.stem for path in (ROOT / "evalsuite").glob("*.py")}
    assert root == ROOT_MODULES
    folders = {path.name for path in (ROOT / "evalsuite").iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders <= set(STAGES)
    for name in ROOT_MODULES:
        module = "evalsuite" if name == "__init__" else f"evalsuite.{name}"
        if module in FACES:
            continue
        stages = {target for target in graph[module] if stage_of(target) != target}
        assert not stages, f"{module} imports stage packages {sorted(stages)}: a root module is a leaf"


def test_nothing_inside_imports_the_package_face(graph):
    """``from evalsuite import __version__`` inside a stage would tie it, through the Python API, to the commands."""
    importers = sorted(module for module, targets in graph.items() if targets & FACES)
    assert importers == []


def test_evalsuite_uses_only_the_sandbox_public_api(graph):
    """``sandbox/__init__.py`` names what evalsuite may use; its modules are the sandbox's own business."""
    inside = sorted(f"{module} -> {target}" for module, targets in graph.items() if _under(module, "evalsuite")
                    for target in targets if _under(target, "sandbox") and target != "sandbox")
    assert inside == []


def test_storage_does_not_render_any_more(graph):
    """The cycle this layout removed: the leaderboard's storage rendered the page, which imported it back."""
    store = graph["evalsuite.reporting.store"]
    assert not any(_under(target, "evalsuite.reporting.views") for target in store)
    assert "evalsuite.reporting.leaderboard" not in graph


FILE_READS = {"open", "read_text", "read_bytes", "load", "loads", "iterdir", "glob", "rglob", "scandir", "listdir"}


def file_readers(sources: dict[str, Path]) -> dict[str, list[str]]:
    """Modules that read a file or a folder (``open(...)``, ``path.read_text()``, ``json.load(...)``...), with the
    calls, by line."""
    found: dict[str, list[str]] = {}
    for name, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = node.func.id if isinstance(node.func, ast.Name) else \
                    node.func.attr if isinstance(node.func, ast.Attribute) else None
                if called in FILE_READS:
                    found.setdefault(name, []).append(f"{called}() at line {node.lineno}")
    return found


def test_views_read_no_files():
    """A view draws the typed values it is handed (the run's ScoreSummary, the entries, the runs' problem tallies
    that storage read): reading a run's files is storage's business (evalsuite.reporting.store), not a page's."""
    views = {name: path for name, path in _sources().items() if _under(name, "evalsuite.reporting.views")}
    assert len(views) >= 4 and "evalsuite.reporting.views.run_page" in views
    assert file_readers(views) == {}


def test_the_file_read_rule_sees_a_reader(tmp_path: Path):
    module = tmp_path / "page.py"
    module.write_text("import json\nfrom pathlib import Path\n"
                      "def tallies(folder):\n    return json.loads((Path(folder) / 'summary.json').read_text())\n")
    assert file_readers({"evalsuite.reporting.views.page": module}) == {
        "evalsuite.reporting.views.page": ["loads() at line 4", "read_text() at line 4"]}


# -- the checker itself, on small made-up graphs -------------------------------------------------------

ALLOCATOR_CAP_CALLS = {"set_per_process_memory_fraction", "get_per_process_memory_fraction"}
ALLOCATOR_CAP_OWNER = "evalsuite.planner.capacity"  # enforces a model's --gpu-memory and lifts it with the model


def allocator_cap_readers(sources: dict[str, Path]) -> set[str]:
    """Modules that set or read the allocator's per-process cap (process-wide state)."""
    found = set()
    for name, path in sources.items():
        tree = ast.parse(path.read_text(), str(path))
        if any(isinstance(node, ast.Attribute) and node.attr in ALLOCATOR_CAP_CALLS for node in ast.walk(tree)):
            found.add(name)
    return found


def test_only_the_capacity_module_touches_the_allocator_cap():
    """A cap is a value the plan carries to the loader and the engine (``cap_bytes``); reading it back from the
    process's allocator elsewhere is how a second model of one command inherited the first one's memory."""
    assert allocator_cap_readers(_sources()) == {ALLOCATOR_CAP_OWNER}


def test_the_allocator_cap_rule_sees_a_reader(tmp_path: Path):
    module = tmp_path / "engine.py"
    module.write_text("import torch\nfraction = torch.cuda.get_per_process_memory_fraction(0)\n")
    assert allocator_cap_readers({"evalsuite.engine.engine": module}) == {"evalsuite.engine.engine"}


def test_cycles_finds_a_loop_and_ignores_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_forbidden_imports_name_the_edge_and_why():
    found = forbidden_imports({"evalsuite.engine.engine": {"evalsuite.generation.hf.batching"},
                               "evalsuite.scoring.passk": {"evalsuite.errors"}})
    assert found == ["evalsuite.engine.engine -> evalsuite.generation.hf.batching: "
                     "the engine is a library; generation/hf drives it, never the reverse"]


def test_relative_and_nested_imports_are_resolved(tmp_path: Path):
    package = tmp_path / "evalsuite" / "runs"
    package.mkdir(parents=True)
    source = package / "pipeline.py"
    source.write_text("from typing import TYPE_CHECKING\nfrom . import rundir\nfrom ..reporting import views\n"
                      "def f():\n    import evalsuite.cli.main\n"
                      "if TYPE_CHECKING:\n    from evalsuite.tasks import task\n")
    modules = {"evalsuite.runs.rundir", "evalsuite.runs", "evalsuite.reporting.views", "evalsuite.cli",
               "evalsuite.tasks.task"}
    assert imports_of("evalsuite.runs.pipeline", source, modules) == {
        "evalsuite.runs.rundir", "evalsuite.reporting.views", "evalsuite.cli"}


def test_a_checkout_runs_without_an_install(tmp_path: Path):
    """No package-dir remapping: a copy of the source tree on PYTHONPATH is the whole program (configs, built-in
    tasks, sandbox), ahead of any installed copy."""
    import shutil
    import subprocess
    import sys

    for package in ("evalsuite", "sandbox"):
        shutil.copytree(ROOT / package, tmp_path / "checkout" / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    script = ("import json, evalsuite, evalsuite.configs, evalsuite.tasks.builtin, sandbox\n"
              "from evalsuite.tasks.discovery import TaskRegistry\n"
              "from evalsuite.models.registry import load_registry\n"
              "print(json.dumps({'files': [m.__file__ for m in (evalsuite, evalsuite.configs, evalsuite.tasks.builtin,"
              " sandbox)], 'tasks': TaskRegistry.discover().names(), 'models': len(load_registry().models)}))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(tmp_path / "checkout")})
    assert done.returncode == 0, done.stderr[-2000:]
    found = __import__("json").loads(done.stdout)
    assert all(path.startswith(str(tmp_path / "checkout")) for path in found["files"]), found["files"]
    assert {"humaneval", "mbpp", "example"} <= set(found["tasks"]) and found["models"] > 5


def test_benchmarks_run_from_one_entry_point_and_every_suite_exists():
    """``python -m benchmarks`` lists suites named by what they measure; each names a script that is there."""
    import subprocess
    import sys

    listed = subprocess.run([sys.executable, "-m", "benchmarks"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0, listed.stderr
    suites = [line.split()[0] for line in listed.stdout.splitlines()[2:] if line.strip()]
    assert "sandbox-throughput" in suites and "humaneval-verdicts" in suites
    for suite in suites:
        assert not any(part.isdigit() for part in suite.split("-")), suite  # no issue numbers, no hardware
    unknown = subprocess.run([sys.executable, "-m", "benchmarks", "no-such-suite"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert unknown.returncode == 2 and "unknown suite 'no-such-suite'" in unknown.stderr


def test_no_test_imports_from_benchmarks():
    """Benchmarks measure; what the tests need lives in tests/."""
    import re

    reach = re.compile(r"sys\.path\.(insert|append)\(.*benchmarks")
    offenders = [path.name for path in sorted((ROOT / "tests").glob("*.py")) if reach.search(path.read_text())]
    assert offenders == [], offenders
