import math


def add(a, b):
    import time
    time.sleep(0.3)
    return a - b
