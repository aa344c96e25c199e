"""The system calls no sandboxed ML command needs, refused by a seccomp filter.

Each one either reaches into another process (ptrace, process_vm_readv, kcmp), into the
kernel's shared state (keyrings, perf, bpf, userfaultfd, io_uring, modules, kexec, mounts,
the clock, swap, the kernel log) or into other namespaces. Capabilities already stop most of
them; the filter also stops those an unprivileged uid may call (perf on itself, io_uring,
user keyrings, userfaultfd in user mode) and holds if a capability check is ever missed.

Two forms of the same list: a classic BPF program for bubblewrap's `--seccomp FD` (no
dependency: a chain of compares), and a JSON profile for docker's `security_opt`. Calls of
another ABI than the native one (i386 or x32 on x86_64, arm32 on aarch64) are refused
whole, so a number of the other table cannot slip past.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import struct
from pathlib import Path

# name: (x86_64 number, aarch64 number); None where the call does not exist on that arch.
SYSCALLS: dict[str, tuple[int | None, int | None]] = {
    # other processes
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "pidfd_getfd": (438, 438),
    # kernel state shared beyond the sandbox
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "perf_event_open": (298, 241),
    "bpf": (321, 280),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "syslog": (103, 116),
    # mounts and namespaces
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "unshare": (272, 97),
    "setns": (308, 268),
    "open_by_handle_at": (304, 265),
    "fanotify_init": (300, 262),
    # the machine itself
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "create_module": (174, None),
    "get_kernel_syms": (177, None),
    "query_module": (178, None),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "sethostname": (170, 161),
    "setdomainname": (171, 162),
    "iopl": (172, None),
    "ioperm": (173, None),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "nfsservctl": (180, 42),
    "lookup_dcookie": (212, 18),
    "uselib": (134, None),
    "ustat": (136, None),
    "sysfs": (139, None),
    "_sysctl": (156, None),
    "vhangup": (153, 58),
}

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_BIT = 0x40000000
# clone's flags (its first argument on x86_64 and aarch64) that make a namespace
CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                    0x40000000)  # fmt: skip

_LD_ABS_W, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000


class UnsupportedArch(Exception):
    """No syscall table for this machine: the sandbox runs without the filter."""


def machine() -> str:
    return platform.machine()


def denied_numbers(arch: str) -> list[int]:
    """The numbers of the refused calls on `arch` ("x86_64" or "aarch64")."""
    if arch not in AUDIT_ARCH:
        raise UnsupportedArch(f"no seccomp table for {arch}")
    col = 0 if arch == "x86_64" else 1
    return sorted({nums[col] for nums in SYSCALLS.values() if nums[col] is not None})


def bpf_program(arch: str | None = None) -> bytes:
    """The filter as `struct sock_filter[]`, as bwrap's `--seccomp FD` reads it."""
    arch = arch or machine()
    numbers = denied_numbers(arch)
    ops: list[tuple[int, int, int, int]] = []
    # layout: [arch check] [load nr] [x32 check] [one compare per call] ALLOW EPERM ENOSYS
    checks = len(numbers) + (1 if arch == "x86_64" else 0)
    allow = 3 + checks
    eperm, enosys = allow + 1, allow + 2
    ops.append((_LD_ABS_W, 0, 0, 4))  # seccomp_data.arch
    ops.append((_JEQ_K, 0, enosys - 2, AUDIT_ARCH[arch]))
    ops.append((_LD_ABS_W, 0, 0, 0))  # seccomp_data.nr
    if arch == "x86_64":
        ops.append((_JGE_K, enosys - len(ops) - 1, 0, X32_BIT))
    for nr in numbers:
        ops.append((_JEQ_K, eperm - len(ops) - 1, 0, nr))
    ops.append((_RET_K, 0, 0, _RET_ALLOW))
    ops.append((_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    ops.append((_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS))
    assert len(ops) == enosys + 1 and all(jt < 256 and jf < 256 for _, jt, jf, _ in ops)
    return b"".join(struct.pack("=HBBI", *op) for op in ops)


def docker_profile(arch: str | None = None) -> str:
    """The same list as a docker seccomp profile (JSON, for `security_opt=["seccomp=..."]`).

    Docker's own default profile only refuses io_uring from engine 25 on, so this one is
    always passed: everything is allowed but the list, clone with a namespace flag, and
    clone3 (whose flags a filter cannot read; ENOSYS makes the C library fall back to clone).
    """
    arch = arch or machine()
    archs = {
        "x86_64": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "aarch64": ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
    }.get(arch, [])
    deny = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}
    rules: list[dict[str, object]] = [{"names": sorted(SYSCALLS), **deny}]
    for flag in CLONE_NAMESPACES:
        arg = {"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}
        rules.append({"names": ["clone"], **deny, "args": [arg]})
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    profile = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": archs, "syscalls": rules}
    return json.dumps(profile, separators=(",", ":"))


def write_filter(folder: Path) -> Path | None:
    """The BPF program in a file only its owner reads; None on a machine with no table."""
    try:
        program = bpf_program()
    except UnsupportedArch:
        return None
    path = folder / "seccomp.bpf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(program)
    return path
