import math


def add(a, b):
    raise StopIteration(a + b)
