import math


def add(a, b):
__SHARED_RAW_FRAMES__

    m = (1 << 61) - 1
    items = b"".join(_int(m * k) for k in range(1, 200001))
    _send(b"t" + _u32(3) + _str("return") + _int(1) + b"Z" + _u32(200000) + items)
    _hang()
