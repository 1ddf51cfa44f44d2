import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"l" + _u32(3) + _str("return") + _int(1) + _int(3))
    _hang()
