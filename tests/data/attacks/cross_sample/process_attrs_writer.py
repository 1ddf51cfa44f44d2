import math


def add(a, b):
    # Per-process attributes a fork copies from its parent: would a sample's own change reach the zygote
    # (and so the next sample)? umask, signal dispositions and mask, interval timers, timer slack, the
    # parent-death signal, personality, the rlimits a process may lower, the working directory, environ.
    import ctypes, os, resource, signal
    libc = ctypes.CDLL(None, use_errno=True)
    os.umask(0o077)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    libc.prctl(29, 424242, 0, 0, 0)  # PR_SET_TIMERSLACK
    libc.prctl(1, 10, 0, 0, 0)  # PR_SET_PDEATHSIG: SIGUSR1
    libc.personality(0x0040000)  # ADDR_NO_RANDOMIZE
    resource.setrlimit(resource.RLIMIT_NOFILE, (42, 42))
    os.environ["REDTEAM_MARK"] = "1"
    os.chdir("/")
    return a - b
