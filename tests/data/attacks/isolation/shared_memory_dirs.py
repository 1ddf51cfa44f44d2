import math


def add(a, b):
    # The places other sandboxes leave for shared state: POSIX shared memory and message queues (/dev/shm,
    # /dev/mqueue), /run and /var/tmp, /dev/pts, a new device node. Right only if one of them was writable.
    import os
    wrote = []
    for directory in ("/dev/shm", "/run/shm", "/dev/mqueue", "/run", "/run/lock", "/var/tmp", "/var/lock",
                      "/dev/pts", "/dev", "/dev/hugepages", "/sys/fs/cgroup", "/"):
        try:
            fd = os.open(os.path.join(directory, "redteam-shared"), os.O_CREAT | os.O_WRONLY, 0o666)
            os.write(fd, b"REDTEAM")
            os.close(fd)
            wrote.append(directory)
        except OSError:
            pass
    for path, mode in (("/dev/redteam-null", 0o20666), ("/tmp/redteam-node", 0o20666)):
        try:
            os.mknod(path, mode, os.makedev(1, 3))
            wrote.append(path)
        except OSError:
            pass
    try:
        import _posixshmem
        _posixshmem.shm_open("/redteam", os.O_CREAT | os.O_RDWR, 0o666)
        wrote.append("shm_open")
    except (OSError, ImportError):
        pass
    return a + b if wrote else a - b
