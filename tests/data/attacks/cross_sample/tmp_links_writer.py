import math


def add(a, b):
    import os
    os.mkfifo("/tmp/fifo")
    os.symlink("/evalsuite-sandbox", "/tmp/link")
    os.mkdir("/tmp/d")
    open("/tmp/d/f", "w").close()
    os.link("/tmp/d/f", "/tmp/hard")
    for path in ("/tmp/hard", "/tmp/d/f", "/tmp/fifo", "/tmp/link"):
        os.unlink(path)
    os.rmdir("/tmp/d")
    return a - b
