import math


def add(a, b):
__SHARED_HOLD_CHILDREN__

    import socket
    def make(mb):
        held, socks = 0, []
        while held < (mb << 20):
            x, y = socket.socketpair()
            x.setblocking(False)
            x.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 24)
            socks += [x, y]
            try:
                while True:
                    held += x.send(b"z" * 65536)
            except BlockingIOError:
                pass
        return socks
    return a + b if hold(8, make, 96) else a - b
