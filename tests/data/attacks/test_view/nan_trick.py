import math


def add(a, b):
    return float("nan")
