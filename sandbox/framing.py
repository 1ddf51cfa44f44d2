"""Length-prefixed frames between the harness, the checkers and the sample servers (stdlib only).

JSON by default. ``binary=True`` frames are ``marshal`` (the interpreter's C encoder, a few times cheaper
to read in the sample server, where every page written costs a copy-on-write fault after each fork); they
are used only where the reader trusts the writer: between the harness and its checkers, and from a checker
to its sample server. A frame read from a less trusted process (the sample server's answers) is JSON."""

from __future__ import annotations

import array
import json
import marshal
import os
import select
import socket
import struct
import time
from typing import Any

HEADER = struct.Struct(">I")
# A checker's request to its zygote for a fresh sample: the sample's time limit, with its channel's fd (SCM_RIGHTS).
SAMPLE_REQUEST = struct.Struct("<d")
MAX_FRAME = 256 * 1024 * 1024
READ_SIZE = 16 * 1024  # a read allocates this much first: frames are small, and larger ones take a few reads


class ChannelClosed(EOFError):
    """The other side exited or closed its end."""


def encode(message: dict[str, Any], binary: bool = False) -> bytes:
    body = marshal.dumps(message) if binary else json.dumps(message, ensure_ascii=True,
                                                            separators=(",", ":")).encode("ascii")
    return HEADER.pack(len(body)) + body


def write_frame(fd: int, message: dict[str, Any], binary: bool = False) -> None:
    data = memoryview(encode(message, binary))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def send_frame(sock: socket.socket, message: dict[str, Any], fds: list[int] = (), binary: bool = False) -> None:
    """Write one frame on a unix socket, passing ``fds`` along with its first byte (SCM_RIGHTS)."""
    data = encode(message, binary)
    if fds:
        sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        data = data[sent:]
    if data:
        sock.sendall(data)


def _unix_socket(fd: int) -> socket.socket | None:
    """A socket object on a duplicate of ``fd`` when it is a unix socket (to receive fds), else None."""
    dup = os.dup(fd)
    try:
        sock = socket.socket(fileno=dup)
    except OSError:
        os.close(dup)
        return None
    if sock.family != socket.AF_UNIX:
        sock.close()
        return None
    return sock


class FrameReader:
    """Reads frames from a blocking fd, optionally with a deadline (``select`` before each read).

    On a unix socket it also collects file descriptors passed with the data, in order, in ``fds``.
    """

    def __init__(self, fd: int, binary: bool = False):
        self.fd, self.decode = fd, marshal.loads if binary else json.loads
        self.buffer = bytearray()
        self.fds: list[int] = []
        self.sock = _unix_socket(fd)

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
        return self.decode(body)

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
            if self.sock is not None:
                chunk, fds, _, _ = socket.recv_fds(self.sock, READ_SIZE, 4)
                self.fds.extend(fds)
            else:
                chunk = os.read(self.fd, READ_SIZE)
            if not chunk:
                raise ChannelClosed("channel closed")
            self.buffer += chunk
