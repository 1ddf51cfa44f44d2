import math
import sys


def add(a, b):
__SHARED_RAW_FRAMES__
    seq = sys._getframe(1).f_locals["seq"]
    # the right sum, as the items of an iterator: the test compares the answer itself, so it must still fail
    _send(b"t" + _u32(3) + _str("iterator") + _int(seq) + b"l" + _u32(1) + _int(a + b))
    _hang()
