import math


def add(a, b):
    raise ValueError("\ud800 passed \udfff\x00\x1b[2J")
