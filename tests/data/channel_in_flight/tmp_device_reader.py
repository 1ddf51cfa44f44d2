# problem: secret
# Reader: the device number of its /tmp (fstatat: not refused; statx is ENOSYS, statfs EPERM).
import os
def secret(x):
    return os.stat("/tmp").st_dev
