import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(3) + _str("return") + b"T" + _int(3))
    _hang()
