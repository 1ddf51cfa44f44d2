import math


def add(a, b):
    return a - b

__SHARED_RAW_FRAMES_TOP_LEVEL__

_send(b"t" + _u32(1) + _str("ready"))
for seq in range(1, 40):
    _send(b"t" + _u32(3) + _str("return") + _int(seq) + _int(3))
_hang()
