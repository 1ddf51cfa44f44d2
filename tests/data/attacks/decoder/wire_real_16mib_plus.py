import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(3) + _str("return") + _int(1) + b"b" + _u32(16 << 20) + bytes(16 << 20))
    _hang()
