import math


def add(a, b):
__SHARED_HOLD_CHILDREN__

    def make(mb):
        return bytearray(b"x" * (mb << 20))
    return a + b if hold(4, make, 200) else a - b
