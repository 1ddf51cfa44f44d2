"""Triton's interpreter (``TRITON_INTERPRET=1``) runs the engine's kernels on the CPU, so they can be tested and
changed without a GPU: ``TRITON_INTERPRET=1 pytest tests/test_engine_kernels.py tests/test_engine.py`` with Triton
installed (``pip install triton``; CPU-only torch does not bring it). conftest.py applies the fix below then."""

from __future__ import annotations


def take_loaded_scalars_as_indices() -> bool:
    """Triton 3.6's interpreter turns a tensor into a Python int with ``int(array)``. A scalar a kernel loaded is a
    one-element array there, which numpy 2 no longer converts, so every loop bounded by a loaded length (all the
    attention kernels) failed. Take the element instead. Only the interpreter is touched; the GPU compiles."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = interpreter._patch_lang_tensor  # a private function: absent in another layout, leave it be
    if getattr(original, "takes_loaded_scalars", False):
        return True

    def patch(tensor, scope) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patch.takes_loaded_scalars = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patch
    return True
