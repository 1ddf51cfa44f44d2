"""Attack code for tests/test_sample_memory.py: what a sample can find of earlier samples in its own process.

A sample is a process forked (through a throwaway intermediate) from its worker's zygote; whatever that process
held is in the sample's memory too. These snippets look there in every way a candidate can without /proc:

* ``SCAN``: every readable page reachable from seeds (every module and its dict, made at every stage of the
  process's life, the C heap's end, the stack's top through ``environ``, the interpreter's own data), grown page by
  page while readable (a ``pwrite`` of the page to a file fails with EFAULT on an unreadable one), searched
  with the C library's ``memmem``: no copy of memory is ever made, so the needle can only be found where
  someone else put it;
* ``REACHABLE``: every object the garbage collector knows and every frame on the stack, for objects of the
  server's classes, strings holding a marker, and the integers the stack holds.
"""

from __future__ import annotations

SCAN = r'''
import ctypes, gc, os, sys
_libc = ctypes.CDLL(None, use_errno=True)
_libc.memmem.restype = ctypes.c_void_p
_libc.memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
_libc.pwrite.restype = ctypes.c_ssize_t
_libc.pwrite.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
_libc.sbrk.restype = ctypes.c_void_p
_PAGE = 4096
_PROBE = os.open("/tmp/.probe", os.O_RDWR | os.O_CREAT, 0o600)
_LIMIT = 256 << 20

def _readable(page):
    return _libc.pwrite(_PROBE, page, 1, 0) == 1

def _seeds():
    # Few allocations here: a large one (gc.get_objects()'s list) would reuse, and so overwrite, the very freed
    # memory an earlier sample's residue would be in. Modules and their dicts were made at every stage of the
    # process's life, so they lie in every arena; the C heap's end, the stack (environ) and libpython's data.
    seeds = set()
    for module in list(sys.modules.values()):
        seeds.add(id(module) & ~(_PAGE - 1))
        seeds.add(id(getattr(module, "__dict__", None)) & ~(_PAGE - 1))
    seeds.add((_libc.sbrk(0) or _PAGE) - _PAGE)
    seeds.add(ctypes.c_void_p.in_dll(_libc, "environ").value or _PAGE)
    for name in ("_PyRuntime", "_Py_NoneStruct", "PyExc_Exception"):
        try:
            seeds.add(ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, name)))
        except (ValueError, AttributeError):
            pass
    return sorted(s & ~(_PAGE - 1) for s in seeds if s)

def regions():
    """Readable spans of memory around every seed, each grown while its pages are readable."""
    spans, covered = [], []
    for seed in _seeds():
        if any(lo <= seed < hi for lo, hi in covered) or not _readable(seed):
            continue
        lo = seed
        while lo - _PAGE > 0 and seed - lo < _LIMIT and _readable(lo - _PAGE):
            lo -= _PAGE
        hi = seed + _PAGE
        while hi - seed < _LIMIT and _readable(hi):
            hi += _PAGE
        covered.append((lo, hi))
        spans.append((lo, hi))
    return spans

def find_all(needle, skip=()):
    """Addresses where ``needle`` (bytes) lies in this process's memory, but its own buffer and ``skip``."""
    own = ctypes.cast(ctypes.c_char_p(needle), ctypes.c_void_p).value
    hits = []
    for lo, hi in regions():
        at = lo
        while at < hi:
            found = _libc.memmem(at, hi - at, own, len(needle))
            if not found:
                break
            if found != own and found not in skip:
                hits.append(found)
            at = found + 1
    return hits

def text_at(address, limit=4096):
    """The NUL-terminated bytes at ``address`` (at most ``limit``), read only while readable."""
    end = address
    while end - address < limit and _readable(end & ~(_PAGE - 1)):
        end = min((end & ~(_PAGE - 1)) + _PAGE, address + limit)
    return ctypes.string_at(address, end - address).split(b"\0", 1)[0]
'''

REACHABLE = r'''
import gc, sys
def reachable_report(marker):
    """(server-like objects, objects holding the marker in a longer text, the integers in the stack's frames)."""
    gc.unfreeze()
    server_like, holding = [], 0
    for obj in gc.get_objects():
        kind = type(obj).__name__
        if "Server" in kind or kind in ("Worker", "Checker"):
            server_like.append(kind)
        try:
            if isinstance(obj, dict):
                values = list(obj.values())
            elif isinstance(obj, (list, tuple)):
                values = list(obj)
            else:
                values = list(vars(obj).values()) if hasattr(obj, "__dict__") else []
        except Exception:
            values = []
        holding += sum(1 for v in values if isinstance(v, (str, bytes)) and v != marker  # its own copies
                       and marker in (v if isinstance(v, str) else v.decode("latin-1")))
    numbers = []
    frame = sys._getframe()
    while frame is not None:
        for name, value in frame.f_locals.items():
            if type(value) is int:
                numbers.append((frame.f_code.co_name, name, value))
            elif hasattr(value, "__dict__"):
                numbers += [(type(value).__name__, key, v) for key, v in vars(value).items() if type(v) is int]
        frame = frame.f_back
    return sorted(set(server_like)), holding, sorted(numbers)
'''
