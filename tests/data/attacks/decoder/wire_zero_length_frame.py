import math


def add(a, b):
__SHARED_RAW_FRAMES__
    _send(b"")
    _hang()
