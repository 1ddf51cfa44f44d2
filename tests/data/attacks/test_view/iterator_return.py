import math


def add(a, b):
    return iter([a + b])
