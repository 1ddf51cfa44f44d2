import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(3) + _str("return") + _int(1) + b"S" + _u32(1) + b"l" + _u32(0))
    _hang()
