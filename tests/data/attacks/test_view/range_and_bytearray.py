import math


def add(a, b):
    return bytearray(b"3") if a == 1 else range(a + b)
