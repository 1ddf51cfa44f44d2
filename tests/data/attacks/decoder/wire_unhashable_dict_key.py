import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(3) + _str("return") + _int(1) + b"d" + _u32(1) + b"d" + _u32(0) + b"N")
    _hang()
