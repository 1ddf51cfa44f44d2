import math


def add(a, b):
__SHARED_HOLD_CHILDREN__

    import os
    def make(mb):
        fd = os.memfd_create("m")
        for _ in range(mb):
            os.write(fd, b"y" * (1 << 20))
        return fd
    return a + b if hold(4, make, 200) else a - b
