"""compile_ahead.py without Triton (CPU-only installs): it must not run the dry steps, which would otherwise
launch nothing of what they skip on a GPU but here run for real, twice."""

from __future__ import annotations

import importlib.util

import pytest

from evalsuite.engine.compile_ahead import compile_kernels_ahead, compile_threads


@pytest.mark.skipif(importlib.util.find_spec("triton") is not None, reason="Triton installed: tests/test_engine_gpu.py")
def test_without_triton_nothing_is_compiled_ahead_and_the_dry_steps_do_not_run():
    ran: list[int] = []
    assert compile_kernels_ahead(lambda: ran.append(1), "signature") is None
    assert ran == []


def test_compile_threads_are_the_cpus_this_process_may_use():
    import os

    assert compile_threads() == len(os.sched_getaffinity(0))
    pid = os.getpid()
    before = os.sched_getaffinity(pid)
    try:
        os.sched_setaffinity(pid, {min(before)})
        assert compile_threads() == 1
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
    import json
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
