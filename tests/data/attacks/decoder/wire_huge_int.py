import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(3) + _str("return") + _int(1) + b"i" + _u32(1 << 20) + b"\x01" * (1 << 20))
    _hang()
