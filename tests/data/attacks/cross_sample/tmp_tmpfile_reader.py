import math


def add(a, b):
__SHARED_FRESH_TMP_PROBE__
    return a - b
