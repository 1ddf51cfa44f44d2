"""Length-prefixed frames between the harness and the checkers, and the fixed-size messages of each sample between a
checker, its sample server and its zygote (stdlib only).

Frames are JSON by default. ``binary=True`` frames are ``marshal`` (the interpreter's C encoder); they are used
only where the reader trusts the writer: between the harness and its checkers. A frame read from a less trusted
process (the sample server's hello) is JSON. What passes for every sample (:data:`SAMPLE_REQUEST`,
:data:`SAMPLE_END`, :data:`SAMPLE_ENDED`, :data:`SAMPLE_RELEASED`, :data:`NEXT_READY`) is a fixed ``struct``:
nothing to build, or to parse beyond its size, in the sample server and the zygote, where every page written
costs a copy-on-write fault after each fork."""

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
# Per sample, fixed-size messages (no frame to build or parse): the checker's request to its zygote for a fresh
# sample (its time limit, with its channel's fd as SCM_RIGHTS); the checker's word to its sample server that the
# sample of a job is over (the job's id); the server's answer (the id, the sample's exit code and the signal
# that ended it, -1 for none); the checker's word that it has closed its end of the sample's channel (the id),
# and the server's answer once the jail is ready for the next sample (the id).
SAMPLE_REQUEST = struct.Struct("<d")
SAMPLE_END = struct.Struct("<q")
SAMPLE_ENDED = struct.Struct("<qii")
SAMPLE_RELEASED = struct.Struct("<q")
NEXT_READY = struct.Struct("<q")
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


def send_frame(sock: socket.socket, message: dict[str, Any], fds: tuple[int, ...] | list[int] = (),
               binary: bool = False) -> None:
    """Write one frame on a unix socket, passing ``fds`` along with its first byte (SCM_RIGHTS)."""
    data = encode(message, binary)
    if fds:
        sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        data = data[sent:]
    if data:
        sock.sendall(data)


def recv_exact(sock: socket.socket, size: int, timeout: float | None = None) -> bytes:
    """Exactly ``size`` bytes from a blocking stream socket. Raises ChannelClosed on EOF, TimeoutError when
    ``timeout`` seconds pass first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    data = b""
    while len(data) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([sock], [], [], remaining)[0]:
                raise TimeoutError("no answer in time")
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ChannelClosed("channel closed")
        data += chunk
    return data


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
