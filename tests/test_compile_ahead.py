"""compile_ahead.py without Triton (CPU-only installs): it must not run the dry steps, which would otherwise
launch nothing of what they skip on a GPU but here run for real, twice."""

from __future__ import annotations

import importlib.util
import json

import pytest

from evalsuite.devices import usable_cores
from evalsuite.engine.compile_ahead import compile_kernels_ahead


@pytest.mark.skipif(importlib.util.find_spec("triton") is not None, reason="Triton installed: tests/test_engine_gpu.py")
def test_without_triton_nothing_is_compiled_ahead_and_the_dry_steps_do_not_run():
    ran: list[int] = []
    assert compile_kernels_ahead(lambda: ran.append(1), "signature") is None
    assert ran == []


def test_compile_threads_are_the_cpus_this_process_may_use():
    """compile-ahead's thread pool is as wide as usable_cores: a data-parallel rank pinned to its share uses it."""
    import os

    assert usable_cores() == len(os.sched_getaffinity(0))
    pid = os.getpid()
    before = os.sched_getaffinity(pid)
    try:
        os.sched_setaffinity(pid, {min(before)})
        assert usable_cores() == 1
    finally:
        os.sched_setaffinity(pid, before)


@pytest.mark.parametrize("rows", [1, 3, 7, 48, 164, 165, 512, 1000])
def test_the_dry_buckets_reach_every_integer_specialization_of_the_others(rows):
    """Triton tells an integer argument apart by being 1 and by being a multiple of 16: for an argument that is
    the batch times any constant, every bucket's kind is one a dry bucket has."""
    from evalsuite.engine.runner import buckets_up_to, one_bucket_per_specialization

    def kind(value: int) -> tuple[bool, bool]:
        return value == 1, value % 16 == 0

    buckets = buckets_up_to(rows)
    dry = one_bucket_per_specialization(buckets)
    assert set(dry) <= set(buckets) and len(dry) <= 6
    for constant in range(1, 65):
        reached = {kind(batch * constant) for batch in dry}
        assert {kind(batch * constant) for batch in buckets} <= reached, constant


def test_a_listing_only_ever_names_evalsuite_kernels_and_a_bad_one_means_a_dry_run(tmp_path):
    """The listing sits in Triton's cache folder, which other programs write too: a module outside evalsuite is
    never imported from it, and a listing that is torn, malformed or names something that is not a Triton kernel
    reads as none (the run then finds its kernels by a dry run, as on a fresh machine)."""
    import sys

    from evalsuite.engine.compile_ahead import _read_listing, _write_listing

    path = tmp_path / "evalsuite-ahead" / "sig.json"
    assert _read_listing(path) is None  # none yet
    path.parent.mkdir()
    foreign = "evalsuite_test_never_imported_module"
    path.write_text(json.dumps([{"module": foreign, "name": "kernel", "data": "{}"}]))
    assert _read_listing(path) is None and foreign not in sys.modules
    path.write_text(json.dumps([{"module": "evalsuite.engine.runner", "name": "buckets_up_to", "data": "{}"}]))
    assert _read_listing(path) is None  # a function, not a kernel
    path.write_text('[{"module": "evalsuite.engine.runner", "na')
    assert _read_listing(path) is None
    path.write_text("[]")
    assert _read_listing(path) == []

    class Kernel:  # what _write_listing reads of a Triton function
        class fn:
            __module__, __qualname__ = "evalsuite.engine.kernels", "_some_kernel"

    _write_listing(path, [(Kernel, '{"key": 1}')])
    assert json.loads(path.read_text()) == [{"module": "evalsuite.engine.kernels", "name": "_some_kernel",
                                             "data": '{"key": 1}'}]
    assert [p.name for p in path.parent.iterdir()] == ["sig.json"]  # no temporary left behind


class _Kernel:
    """A stand-in for a Triton function: launching it goes through ``jit_cache_hook`` until it is compiled (as
    Triton's ``JITFunction.run`` does); ``preload`` compiles it."""

    def __init__(self, knobs, name: str):
        self.knobs, self.compiled, self.launched = knobs, False, 0

        class fn:
            __module__, __qualname__ = "evalsuite.engine.kernels", name

        self.fn = fn

    def launch(self) -> None:
        from types import SimpleNamespace

        if not self.compiled and self.knobs.runtime.jit_cache_hook is not None:
            if self.knobs.runtime.jit_cache_hook(key=self.fn.__qualname__, fn=SimpleNamespace(jit_function=self),
                                                 compile={"specialization_data": f'"{self.fn.__qualname__}"'}):
                return
        self.launched += 1

    def preload(self, data: str) -> None:
        self.compiled = True


@pytest.fixture
def stand_in_triton(tmp_path, monkeypatch):
    """compile_ahead.py's view of Triton (its knobs, its async compile mode) with kernels that need no GPU."""
    import contextlib
    import sys
    import types

    from evalsuite.engine import compile_ahead

    knobs = types.SimpleNamespace(runtime=types.SimpleNamespace(jit_cache_hook=None),
                                  cache=types.SimpleNamespace(dir=str(tmp_path)))
    triton = types.ModuleType("triton")
    triton.knobs = knobs
    runtime = types.ModuleType("triton.runtime")
    async_compile = types.ModuleType("triton.runtime._async_compile")
    async_compile.AsyncCompileMode = lambda pool, ignore_errors: contextlib.nullcontext()
    for name, module in (("triton", triton), ("triton.runtime", runtime),
                         ("triton.runtime._async_compile", async_compile)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(compile_ahead, "_DONE_IN_PROCESS", set())
    monkeypatch.setattr(compile_ahead, "_read_listing",  # its kernels resolve to this test's stand-ins
                        lambda path: None if not path.exists() else [
                            (knobs.kernels[entry["name"]], entry["data"]) for entry in json.loads(path.read_text())])
    return knobs


def test_a_dry_run_lists_what_it_compiled_and_the_next_process_loads_the_listing(stand_in_triton):
    from evalsuite.engine import compile_ahead

    knobs = stand_in_triton
    knobs.kernels = {name: _Kernel(knobs, name) for name in ("attention", "sampler")}
    steps = lambda: [kernel.launch() for kernel in knobs.kernels.values()]  # noqa: E731

    first = compile_ahead.compile_kernels_ahead(steps, "model-a")
    assert (first.kernels, first.listed) == (2, False)
    assert all(k.compiled and k.launched == 0 for k in knobs.kernels.values())  # compiled, never launched dry
    assert knobs.runtime.jit_cache_hook is None  # the hook is gone after the dry run
    assert compile_ahead.compile_kernels_ahead(steps, "model-a") == compile_ahead.CompileAhead()  # done here

    compile_ahead._DONE_IN_PROCESS.clear()  # a fresh process on the same cache
    knobs.kernels = {name: _Kernel(knobs, name) for name in ("attention", "sampler")}
    again = compile_ahead.compile_kernels_ahead(lambda: pytest.fail("no dry run with a listing"), "model-a")
    assert (again.kernels, again.listed) == (2, True)
    assert all(k.compiled for k in knobs.kernels.values())


def test_a_second_model_in_one_process_lists_nothing_as_the_kernels_it_shares_go_unseen(stand_in_triton, tmp_path):
    """Model B shares the sampler kernel with model A, run first in the same process: B's dry run cannot see it
    (compiled already), so B's findings are not written; a process running B alone lists both."""
    from evalsuite.engine import compile_ahead

    knobs = stand_in_triton
    sampler = _Kernel(knobs, "sampler")
    knobs.kernels = {"attention_a": _Kernel(knobs, "attention_a"), "sampler": sampler}
    compile_ahead.compile_kernels_ahead(lambda: [k.launch() for k in knobs.kernels.values()], "model-a")
    knobs.kernels = {"attention_b": _Kernel(knobs, "attention_b"), "sampler": sampler}
    model_b = lambda: [k.launch() for k in knobs.kernels.values()]  # noqa: E731
    second = compile_ahead.compile_kernels_ahead(model_b, "model-b")
    assert (second.kernels, second.listed) == (1, False) and sampler.launched == 1  # launched for real, dry
    assert not (tmp_path / "evalsuite-ahead" / "model-b.json").exists()

    compile_ahead._DONE_IN_PROCESS.clear()  # model B alone, in a fresh process
    knobs.kernels = {name: _Kernel(knobs, name) for name in ("attention_b", "sampler")}
    alone = compile_ahead.compile_kernels_ahead(model_b, "model-b")
    assert (alone.kernels, alone.listed) == (2, False)
    assert len(json.loads((tmp_path / "evalsuite-ahead" / "model-b.json").read_text())) == 2
