import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"", size=17 << 20)
    _hang()
