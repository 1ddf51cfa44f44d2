"""A package installed for one test: its modules and a ``.dist-info`` whose entry points importlib.metadata
finds on sys.path, as it finds a pip-installed plugin's. Used to extend evalsuite from outside the package."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from evalsuite.registry import Registry


@contextmanager
def installed_plugin(root: Path, modules: Mapping[str, str],
                     entry_points: Mapping[str, Mapping[str, str]], registries: list[Registry]) -> Iterator[None]:
    """``modules``: dotted name -> source; ``entry_points``: group -> {name: "module:attribute"}. The
    ``registries`` read their entry points again on entry and forget the plugin's entries on exit."""
    for name, source in modules.items():
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.parents:
            if parent == root:
                break
            (parent / "__init__.py").touch()
        path.write_text(source)
    info = root / "evalsuite_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalsuite-test-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items()) + "\n"
        for group, points in entry_points.items()))
    sys.path.insert(0, str(root))
    for registry in registries:
        registry.forget_plugins()
    try:
        yield
    finally:
        sys.path.remove(str(root))
        for registry in registries:
            registry.forget_plugins()
        for name in [m for m in sys.modules if m.split(".")[0] in {n.split(".")[0] for n in modules}]:
            sys.modules.pop(name, None)
