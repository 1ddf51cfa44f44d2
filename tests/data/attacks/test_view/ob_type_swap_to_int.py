import math


def add(a, b):
    # An always-equal object whose ob_type is rewritten (ctypes) to int after the fact, so that ``type(x) is
    # int`` holds in the encoder; and an int whose ob_type becomes a subclass with a lying __eq__. Whatever the
    # encoder makes of their memory, the checker only ever sees a plain value it decoded itself.
    import ctypes, sys

    class Lies:
        __slots__ = ("pad0", "pad1", "pad2")
        def __eq__(self, other):
            return True
        __hash__ = object.__hash__

    class EqInt(int):
        def __eq__(self, other):
            return True
        __hash__ = int.__hash__

    liar = Lies()
    ctypes.c_void_p.from_address(id(liar) + 8).value = id(int)
    value = (a - b) * 1000003 + 1000007  # never a cached small int
    ctypes.c_void_p.from_address(id(value) + 8).value = id(EqInt)
    return liar if a % 2 else value
