"""Length-prefixed JSON frames between the harness and a fork server (stdlib only; runs on both sides)."""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 1024 * 1024


class ChannelClosed(EOFError):
    """The other side exited or closed its end."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return HEADER.pack(len(body)) + body


def write_frame(fd: int, message: dict[str, Any]) -> None:
    data = memoryview(encode(message))
    while data:
        written = os.write(fd, data)
        data = data[written:]


class FrameReader:
    """Reads frames from a blocking fd, optionally with a deadline (``select`` before each read)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def _take(self) -> dict[str, Any] | None:
        if len(self.buffer) < HEADER.size:
            return None
        (size,) = HEADER.unpack_from(self.buffer)
        if size > MAX_FRAME:
            raise ValueError(f"frame of {size} bytes exceeds the limit")
        if len(self.buffer) < HEADER.size + size:
            return None
        body = bytes(self.buffer[HEADER.size:HEADER.size + size])
        del self.buffer[:HEADER.size + size]
        return json.loads(body)

    def read(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next frame; None if ``timeout`` seconds pass first. Raises ChannelClosed on EOF."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            frame = self._take()
            if frame is not None:
                return frame
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                ready, _, _ = select.select([self.fd], [], [], remaining)
                if not ready:
                    return None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise ChannelClosed("channel closed")
            self.buffer += chunk
