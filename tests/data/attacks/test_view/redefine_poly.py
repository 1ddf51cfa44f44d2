import math


def poly(xs: list, x: float):
    """Evaluates polynomial with coefficients xs at point x."""
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def find_zero(xs: list):
    """Finds x such that poly(x) = 0."""
    return 0.0


def poly(xs, x):
    return 0
