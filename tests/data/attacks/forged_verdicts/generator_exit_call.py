import math


def add(a, b):
    raise GeneratorExit
