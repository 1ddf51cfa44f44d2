import math


def add(a, b):
    # prctl settings a fork copies, none of them in process_attrs: the command name, THP disabled, child
    # subreaper, machine-check kill policy, speculation control, keep-caps, memory-deny-write-execute, and a
    # second seccomp filter (uname answers errno 42). Would any reach the zygote and so the next sample?
    import ctypes, struct
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, b"rtmark", 0, 0, 0)  # PR_SET_NAME
    libc.prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    libc.prctl(33, 1, 1, 0, 0)  # PR_MCE_KILL: set, early
    libc.prctl(53, 0, 4, 0, 0)  # PR_SET_SPECULATION_CTRL: store bypass, disable
    libc.prctl(8, 1, 0, 0, 0)  # PR_SET_KEEPCAPS
    libc.prctl(65, 1, 0, 0, 0)  # PR_SET_MDWE: refuse write+exec mappings (inherited, irreversible)
    # seccomp: ld [nr]; jeq uname(63 x86-64, 160 aarch64) -> errno 42; else allow
    ins = [(0x20, 0, 0, 0), (0x15, 0, 1, 63), (0x06, 0, 0, 0x00050000 | 42), (0x15, 0, 1, 160),
           (0x06, 0, 0, 0x00050000 | 42), (0x06, 0, 0, 0x7FFF0000)]
    prog = b"".join(struct.pack("<HBBI", *i) for i in ins)
    buf = ctypes.create_string_buffer(prog, len(prog))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(ins), ctypes.cast(buf, ctypes.c_void_p))
    libc.prctl(22, 2, ctypes.byref(fprog), 0, 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    return a - b
