"""Probes of what the sandbox's uid may do to the kernel and to other processes.

A sandboxed root that is the host's root in disguise (its uid mapped to host uid 0) may
write global sysctls such as kernel.core_pattern (a path to code run as host root), open
/proc/sysrq-trigger, or read bubblewrap's memory. Each probe passes only when the attempt
fails: the sandboxed process's host uid is not 0, /proc/sys, /proc/sysrq-trigger and /sys
refuse writes, and ptrace, process_vm_readv, keyrings, perf, bpf, userfaultfd, io_uring,
mount, kexec and module loading are refused; bubblewrap's init, whose memory the sandbox's
uid can read, holds neither the mlagent home nor the session id. Nothing on the host
changes: core_pattern is only written back with the value it already holds, the other files
are opened and closed.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

# Runs inside the sandbox with the standard library only; prints one line "PRIV:{json}",
# each attack mapped to "allowed" or the errno name of its refusal.
PROBE_SCRIPT = r"""
import ctypes, errno, json, os, platform, signal, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {
    "x86_64": dict(ptrace=101, process_vm_readv=310, keyctl=250, add_key=248,
                   perf_event_open=298, bpf=321, userfaultfd=323, mount=165,
                   kexec_load=246, init_module=175, io_uring_setup=425),
    "aarch64": dict(ptrace=117, process_vm_readv=270, keyctl=219, add_key=217,
                    perf_event_open=241, bpf=280, userfaultfd=282, mount=40,
                    kexec_load=104, init_module=105, io_uring_setup=425),
}.get(platform.machine())
out = {"uid": os.getuid()}

def name(err):
    return errno.errorcode.get(err, str(err))

def call(nr, *args):
    ctypes.set_errno(0)
    res = libc.syscall(ctypes.c_long(nr), *args)
    return res, ctypes.get_errno()

def syscall_probe(key, nr, *args, ok_errnos=()):
    res, err = call(nr, *args)
    if res >= 0:
        out[key] = "allowed"
        if key in ("perf_event_open", "userfaultfd", "io_uring_setup", "bpf"):
            os.close(res)
    else:
        out[key] = "allowed" if err in ok_errnos else name(err)

def open_probe(key, path, write_back=False):
    try:
        old = open(path, "rb").read() if write_back else b""
    except OSError:
        old = b""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        out[key] = name(exc.errno)
        return
    try:
        if write_back and old:
            os.write(fd, old)  # the value it already holds: nothing changes
        out[key] = "allowed"
    except OSError as exc:
        out[key] = "allowed" if not write_back else name(exc.errno)
    finally:
        os.close(fd)

open_probe("core_pattern", "/proc/sys/kernel/core_pattern", write_back=True)
open_probe("sysrq_trigger", "/proc/sysrq-trigger")
open_probe("sys_write", "/sys/kernel/mm/transparent_hugepage/enabled")
open_probe("sys_uevent", "/sys/kernel/uevent_helper")
if NR is None:
    out["arch"] = "unsupported " + platform.machine()
    print("PRIV:" + json.dumps(out), flush=True)
    raise SystemExit(0)
L = ctypes.c_long
PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE = 16, 17, 0x4206
buf = ctypes.create_string_buffer(64)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = iovec(ctypes.addressof(buf), 16)
remote = iovec(0x10000, 16)  # unmapped: EFAULT means the access check let us through

def vm_read(key, pid):
    syscall_probe(key, NR["process_vm_readv"], L(pid), ctypes.byref(local), L(1),
                  ctypes.byref(remote), L(1), L(0), ok_errnos=(errno.EFAULT,))

# pid 1 of the sandbox: seized, never stopped; we detach by exiting
syscall_probe("ptrace_pid1", NR["ptrace"], L(PTRACE_SEIZE), L(1), L(0), L(0))
vm_read("vm_readv_pid1", 1)
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
res, err = call(NR["ptrace"], L(PTRACE_ATTACH), L(child), L(0), L(0))
if res == 0:
    out["ptrace_child"] = "allowed"
    os.waitpid(child, os.WUNTRACED)
    call(NR["ptrace"], L(PTRACE_DETACH), L(child), L(0), L(0))
else:
    out["ptrace_child"] = name(err)
vm_read("vm_readv_child", child)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
syscall_probe("add_key", NR["add_key"], b"user", b"mlagent-probe", b"x", L(1), L(-2))
syscall_probe("keyctl", NR["keyctl"], L(0), L(-4), L(0))  # KEYCTL_GET_KEYRING_ID, user ring
attr = ctypes.create_string_buffer(128)
ctypes.memmove(attr, (1).to_bytes(4, "little") + (128).to_bytes(4, "little"), 8)
attr[40] = 0x61  # disabled, exclude_kernel, exclude_hv: a software clock on itself only
syscall_probe("perf_event_open", NR["perf_event_open"], attr, L(0), L(-1), L(-1), L(0))
battr = ctypes.create_string_buffer(b"\x02\0\0\0\x04\0\0\0\x04\0\0\0\x01\0\0\0" + bytes(112))
syscall_probe("bpf", NR["bpf"], L(0), battr, L(128))  # BPF_MAP_CREATE, an array of one
syscall_probe("userfaultfd", NR["userfaultfd"], L(1 | os.O_CLOEXEC))  # user mode only
syscall_probe("mount", NR["mount"], b"none", b"/tmp", b"tmpfs", L(0), None)
syscall_probe("kexec_load", NR["kexec_load"], L(0), L(0), None, L(0))
syscall_probe("init_module", NR["init_module"], None, L(0), b"")
params = ctypes.create_string_buffer(120)
syscall_probe("io_uring_setup", NR["io_uring_setup"], L(1), params)
print("PRIV:" + json.dumps(out), flush=True)
"""

# Reads the memory of the sandbox's pid 1 (bubblewrap's init: same uid, so /proc/1/mem opens
# even where ptrace is refused) for the lines of needles.txt (never in the command line, which
# bwrap holds too).
MEMORY_SCRIPT = r"""
needles = [n.encode() for n in open("needles.txt").read().splitlines() if n]
hits, read = set(), 0
try:
    maps = open("/proc/1/maps").read().splitlines()
    mem = open("/proc/1/mem", "rb", buffering=0)
except OSError as exc:
    print("MEM:unreadable", exc.strerror)
    raise SystemExit(0)
for line in maps:
    span, perms = line.split()[:2]
    start, end = (int(x, 16) for x in span.split("-"))
    if "r" not in perms or end - start > 256 << 20:
        continue
    try:
        mem.seek(start)
        data = mem.read(end - start)
    except OSError:
        continue
    read += len(data)
    hits.update(n.decode() for n in needles if n in data)
print("MEM:" + ("found " + " ".join(sorted(hits)) if hits else f"clean after {read} bytes"))
"""


def memory_leak(executor: Any, ws: Path, needles: list[str]) -> str:
    """What MEMORY_SCRIPT found in pid 1's memory ("found ...", "clean ...", "unreadable")."""
    (ws / "memory_probe.py").write_text(MEMORY_SCRIPT)
    (ws / "needles.txt").write_text("\n".join(needles) + "\n")
    res = executor.run("python3 memory_probe.py", cwd=ws, timeout_s=60, mem_mb=512)
    for name in ("memory_probe.py", "needles.txt"):
        (ws / name).unlink(missing_ok=True)
    lines = [ln for ln in res.output.splitlines() if ln.startswith("MEM:")]
    return lines[-1][4:] if lines else f"no answer: {res.output[-200:]}"


# attack -> what the probe is called in the report
ATTACKS = {
    "core_pattern": "writing /proc/sys/kernel/core_pattern refused",
    "sysrq_trigger": "opening /proc/sysrq-trigger for writing refused",
    "sys_write": "writing into /sys refused",
    "sys_uevent": "writing /sys/kernel/uevent_helper refused",
    "ptrace_pid1": "ptrace of the sandbox's pid 1 refused",
    "vm_readv_pid1": "process_vm_readv of pid 1 refused",
    "ptrace_child": "ptrace of another sandboxed process refused",
    "vm_readv_child": "process_vm_readv of another sandboxed process refused",
    "add_key": "add_key refused",
    "keyctl": "keyctl refused",
    "perf_event_open": "perf_event_open refused",
    "bpf": "bpf refused",
    "userfaultfd": "userfaultfd refused",
    "mount": "mount refused",
    "kexec_load": "kexec_load refused",
    "init_module": "init_module refused",
    "io_uring_setup": "io_uring_setup refused",
}


def parse(output: str) -> dict[str, Any]:
    """The probe's results ({} when it printed none)."""
    for line in output.splitlines():
        if line.startswith("PRIV:"):
            return json.loads(line[5:])
    return {}


def host_uids(marker: str, timeout_s: float = 10.0) -> list[int]:
    """The host uids of the Python sleepers whose command line holds `marker`, once one shows.

    Only a process whose program is Python counts: the launcher before it (env, setpriv,
    a shell) carries the same command line as root for the moment before it drops the uid.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        uids = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
                if marker.encode() not in argv or not _is_python(argv[0]):
                    continue
                status = Path(entry.path, "status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("Uid:"):
                    uids += [int(u) for u in line.split()[1:5]]  # real, effective, saved, fs
        if uids:
            return uids
        time.sleep(0.05)
    return []


def _is_python(program: bytes) -> bool:
    """Whether argv[0] names a Python interpreter (python3, /usr/bin/python3.11, ...)."""
    return os.path.basename(program).startswith(b"python")


def sandbox_host_uids(executor: Any, ws: Path) -> tuple[list[int], str]:
    """Start a sandboxed sleeper and read its uid from the host's /proc."""
    marker = f"mlagent-uid-probe-{secrets.token_hex(4)}"
    result: dict[str, Any] = {}
    cmd = f"python3 -c 'import time; time.sleep(3)' {marker}"
    thread = threading.Thread(
        target=lambda: result.update(res=executor.run(cmd, cwd=ws, timeout_s=30)), daemon=True
    )
    thread.start()
    uids = host_uids(marker)
    thread.join(timeout=40)
    res = result.get("res")
    return uids, (res.output.strip()[-200:] if res is not None else "no result")


def privilege_probes(executor: Any, ws: Path, home: Path, session_id: str, report: Any) -> None:
    """Add one probe per privileged attack to `report` (a SelfTest)."""
    uids, detail = sandbox_host_uids(executor, ws)
    report.add(
        "sandboxed processes are not host root",
        bool(uids) and 0 not in uids,
        f"host uids {sorted(set(uids))}" if uids else f"sleeper not seen: {detail}",
    )
    seen = memory_leak(executor, ws, [str(home), session_id])
    report.add("pid 1's memory names no host path", seen.startswith(("clean", "unreadable")), seen)
    (ws / "privilege_probe.py").write_text(PROBE_SCRIPT)
    res = executor.run("python3 privilege_probe.py", cwd=ws, timeout_s=60, mem_mb=512)
    (ws / "privilege_probe.py").unlink(missing_ok=True)
    found = parse(res.output)
    for key, title in ATTACKS.items():
        outcome = found.get(key)
        if outcome is None:
            report.add(title, False, f"not probed: {found.get('arch') or res.output[-200:]}")
        else:
            report.add(title, outcome != "allowed", str(outcome))
