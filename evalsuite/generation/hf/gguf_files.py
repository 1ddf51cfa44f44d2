"""GGUF files: checked whole before anything reads them, and parsed once per load.

Is a ``.gguf`` file whole? Checked before anything reads it, so a truncated or foreign file is one line
(exit 2), not a ``struct.error`` traceback from deep inside transformers' reader.

The walk reads the header, skips every metadata value without building it (a tokenizer's 50,000-string
vocabulary costs ~0.1 s this way) and checks that every tensor's bytes lie inside the file. Stdlib only;
tensor sizes use the ``gguf`` package's block table when it is installed (it is, wherever a GGUF can load).
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalsuite.errors import EvalsuiteError

MAGIC = b"GGUF"
# value type -> its size in bytes; 8 is a string, 9 an array
SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY = 8, 9
DEFAULT_ALIGNMENT = 32


MAX_PLAUSIBLE_BYTES = 1 << 40  # no GGUF field or file is a TiB: a size beyond it is a corrupt header, not a short file


class _Truncated(Exception):
    pass


def _short_or_corrupt(needed: int, have: int, what: str, short: str) -> Exception:
    """A file of ``have`` bytes whose ``what`` needs ``needed``: truncated (``short`` says how), unless the size is
    beyond any GGUF's: then its header is corrupt, and calling it a short download would mislead."""
    if needed > MAX_PLAUSIBLE_BYTES:
        return ValueError(f"{what} claims {needed:,} bytes, more than any GGUF holds (the file is {have:,} bytes): "
                          "a corrupt header, not a short download; fetch it again")
    return _Truncated(short)


class _Cursor:
    def __init__(self, data: mmap.mmap | bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> int:
        start = self.pos
        if n < 0 or start + n > len(self.data):
            raise _short_or_corrupt(start + n, len(self.data), f"a field at byte {start:,}",
                                    f"ends at byte {len(self.data):,} inside a field that needs {start + n:,}")
        self.pos = start + n
        return start

    def u32(self) -> int:
        return struct.unpack_from("<I", self.data, self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack_from("<Q", self.data, self.take(8))[0]

    def string(self) -> bytes:
        length = self.u64()
        start = self.take(length)
        return bytes(self.data[start:start + length])

    def skip_value(self, kind: int) -> int | None:
        """Skip one value; returns it when it is an unsigned 32-bit int (``general.alignment``)."""
        if kind == STRING:
            self.take(self.u64())
        elif kind == ARRAY:
            item_kind, count = self.u32(), self.u64()
            if item_kind in SCALAR_SIZES:
                self.take(SCALAR_SIZES[item_kind] * count)
            else:
                for _ in range(count):
                    self.skip_value(item_kind)
        elif kind in SCALAR_SIZES:
            start = self.take(SCALAR_SIZES[kind])
            if kind == 4:
                return struct.unpack_from("<I", self.data, start)[0]
        else:
            raise ValueError(f"unknown metadata value type {kind}")
        return None


def _tensor_bytes(ggml_type: int, elements: int) -> int | None:
    try:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    except ImportError:
        return None
    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
    except (KeyError, ValueError):
        raise ValueError(f"unknown tensor type {ggml_type}") from None
    return elements // block * size


def check_gguf_file(path: str | Path) -> None:
    """Raise EvalsuiteError (one line) unless ``path`` is a complete GGUF file."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            if path.stat().st_size < 24:
                raise _Truncated(f"is {path.stat().st_size} bytes, shorter than a GGUF header")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                _walk(data)
    except _Truncated as exc:
        raise EvalsuiteError(f"{path}: not a complete GGUF file: it {exc} (truncated download? fetch it again)") \
            from None
    except (ValueError, OverflowError, MemoryError) as exc:
        raise EvalsuiteError(f"{path}: not a readable GGUF file: {exc}") from None
    except OSError as exc:
        raise EvalsuiteError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _walk(data: mmap.mmap) -> None:
    cursor = _Cursor(data)
    if bytes(data[:4]) != MAGIC:
        raise ValueError(f"it starts with {bytes(data[:4])!r}, not the GGUF magic {MAGIC!r}")
    cursor.take(4)
    version = cursor.u32()
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version} (this reader knows 2 and 3)")
    tensors, entries = cursor.u64(), cursor.u64()
    alignment = DEFAULT_ALIGNMENT
    for _ in range(entries):
        key = cursor.string()
        value = cursor.skip_value(cursor.u32())
        if key == b"general.alignment" and value:
            alignment = value
    end = 0
    for _ in range(tensors):
        cursor.string()
        dims = cursor.u32()
        elements = 1
        for _ in range(dims):
            elements *= cursor.u64()
        ggml_type, offset = cursor.u32(), cursor.u64()
        size = _tensor_bytes(ggml_type, elements)
        end = max(end, offset + (size or 0))
    data_start = -(-cursor.pos // alignment) * alignment
    if data_start + end > len(data):
        raise _short_or_corrupt(data_start + end, len(data), "its tensor table",
                                f"ends at byte {len(data):,}, but its tensors need {data_start + end:,}")


@contextmanager
def gguf_parsed_once() -> Iterator[None]:
    """Within the block, each GGUF file is parsed once, not three times.

    Why: transformers reads the whole file (metadata, the tokenizer's ~50,000-string vocabulary, tensor infos)
    again for the config, the tokenizer and the weights, and builds gguf's tensor-name map for every module:
    26 s of a 31 s SmolLM2-135M load on 2 cores, 105 s with both cores busy. The ``gguf`` package's
    reader is read-only, so one reader per path serves all three; the name map depends only on its arguments.
    """
    try:
        import gguf
    except ImportError:
        yield
        return
    if getattr(gguf.GGUFReader, "evalsuite_shared", False):  # already inside such a block
        yield
        return
    original_reader, original_name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], object] = {}

    def shared_reader(path, mode: str = "r"):
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = original_reader(path, mode)  # type: ignore[arg-type]  # the caller's own mode
        return readers[key]

    shared_reader.evalsuite_shared = True  # type: ignore[attr-defined]
    gguf.GGUFReader = shared_reader  # type: ignore[misc,assignment]  # patched for the with-block only
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(original_name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = original_reader, original_name_map  # type: ignore[misc]


@contextmanager
def gguf_bar_as_transformers_says() -> Iterator[None]:
    """Within the block, transformers' "Converting and de-quantizing GGUF tensors" bar follows its own progress-bar
    switch (``--quiet`` turns it off): that bar is drawn with tqdm itself, which ignores the switch."""
    try:
        from transformers import modeling_gguf_pytorch_utils as converting
        from transformers.utils import logging as transformers_logging
    except ImportError:
        yield
        return
    original = converting.tqdm
    if transformers_logging.is_progress_bar_enabled():
        yield
        return
    converting.tqdm = functools.partial(original, disable=True)  # patched for the with-block only
    try:
        yield
    finally:
        converting.tqdm = original
