import math


def add(a, b):
    # A recursion bomb with the recursion limit raised as far as it goes, under a small stack: the interpreter
    # either raises RecursionError (caught and re-raised as a message-less "pass"), or the stack overflows
    # (SIGSEGV). Neither may read as a pass.
    import sys, threading
    sys.setrecursionlimit(10 ** 9)

    def down(n):
        return down(n + 1) + 1

    try:
        down(0)
    except RecursionError:
        raise RecursionError("") from None
    except MemoryError:
        raise MemoryError("") from None
    return a - b
