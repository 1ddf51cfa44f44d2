import math


def add(a, b):
    return a - b

import _ctypes, sys
sys.modules["not_ctypes"] = __import__("ctypes")
import not_ctypes
not_ctypes.pythonapi.Py_IncRef
