"""The seccomp list: its numbers match the kernel headers, and both forms refuse the same calls."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox.seccomp import (
    AUDIT_ARCH,
    SYSCALLS,
    UnsupportedArch,
    bpf_program,
    denied_numbers,
    docker_profile,
)

HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),  # aarch64 uses the generic table
}


@pytest.mark.parametrize("arch", sorted(HEADERS))
def test_numbers_match_the_kernel_headers(arch: str) -> None:
    header = HEADERS[arch]
    if not header.exists():
        pytest.skip(f"{header} is not installed")
    defined = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)\b", header.read_text())
    }
    col = 0 if arch == "x86_64" else 1
    wrong = {n: (nums[col], defined.get(n)) for n, nums in SYSCALLS.items()}
    assert {n: v for n, v in wrong.items() if v[0] != v[1]} == {}


def run_filter(program: bytes, nr: int, arch: int) -> int:
    """A tiny interpreter of the classic BPF this module emits: the filter's verdict."""
    ops = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    data = {0: nr, 4: arch}
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            acc = data[k]
        elif code == 0x06:
            return k
        elif code in (0x15, 0x35):
            hit = acc == k if code == 0x15 else acc >= k
            pc += jt if hit else jf
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")
        pc += 1


@pytest.mark.parametrize("arch", sorted(AUDIT_ARCH))
def test_filter_refuses_the_list_and_allows_the_rest(arch: str) -> None:
    program = bpf_program(arch)
    native = AUDIT_ARCH[arch]
    denied = set(denied_numbers(arch))
    for nr in range(0, 460):
        verdict = run_filter(program, nr, native)
        assert verdict == (0x00050001 if nr in denied else 0x7FFF0000), nr
    # another ABI's numbers never reach the table: refused whole
    assert run_filter(program, 0, 0x40000003) == 0x00050000 | 38
    if arch == "x86_64":
        assert run_filter(program, 0x40000000 + 101, native) == 0x00050000 | 38


def test_io_uring_and_ptrace_are_on_the_list() -> None:
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace", "bpf"):
        assert name in SYSCALLS


def test_unknown_arch_is_reported() -> None:
    with pytest.raises(UnsupportedArch):
        bpf_program("riscv64")


def test_docker_profile_is_the_same_list() -> None:
    profile = json.loads(docker_profile("x86_64"))
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert "SCMP_ARCH_X86" in profile["architectures"]
    listed = {name for rule in profile["syscalls"] if "args" not in rule for name in rule["names"]}
    assert set(SYSCALLS) <= listed
    clone_rules = [r for r in profile["syscalls"] if r["names"] == ["clone"]]
    assert any(r["args"][0]["value"] == 0x10000000 for r in clone_rules)  # CLONE_NEWUSER
