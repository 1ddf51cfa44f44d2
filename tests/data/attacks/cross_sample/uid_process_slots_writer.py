import math


def add(a, b):
    # Processes of the sample uid that might outlive the sample: zombies nobody reaps, double-forked sleepers in
    # sessions of their own. RLIMIT_NPROC counts every process of the uid, so the next sample could count them.
    import os, time
    for _ in range(10):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                if os.fork() == 0:
                    os.setsid()
                    time.sleep(30)
            finally:
                os._exit(0)
    return a - b  # the children exit unreaped: zombies
