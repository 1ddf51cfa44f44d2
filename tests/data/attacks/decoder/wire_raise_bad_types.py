import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(5) + _str("raise") + _int(1) + _int(0) + _int(1) + b"N")
    _hang()
