"""Attacks on the kernel and on other processes from inside a sandbox, run as root in CI.

When mlagent runs as root, a sandbox whose uid maps to host uid 0 may write global sysctls
(kernel.core_pattern runs a program as host root on the next crash), open
/proc/sysrq-trigger, and read bubblewrap's memory. Each test asserts the attempt fails and
that nothing on the host changed; core_pattern is only ever written back with its own value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox import hostuid
from mlagent_tui.core.sandbox.hostuid import UID_ENV, HostUidError, hand_over, sandbox_host_uid
from mlagent_tui.core.sandbox.local import LocalExecutor
from mlagent_tui.core.selftest.privilege import (
    ATTACKS,
    PROBE_SCRIPT,
    host_uids,
    memory_leak,
    parse,
    sandbox_host_uids,
)

from .conftest import bwrap_ready, docker_ready

pytestmark = [pytest.mark.adversarial]
local_only = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap is not usable here")
CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")


def run_probe(executor, ws: Path) -> dict:  # noqa: ANN001
    before = CORE_PATTERN.read_bytes()
    (ws / "probe.py").write_text(PROBE_SCRIPT)
    res = executor.run("python3 probe.py", cwd=ws, timeout_s=60, mem_mb=512)
    assert CORE_PATTERN.read_bytes() == before
    found = parse(res.output)
    assert found, res.output
    return found


@pytest.fixture(scope="module")
def local_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mlhome") / "workspaces" / "20261127-010203-abcdef"
    path.mkdir(parents=True)
    return path


@pytest.fixture(scope="module")
def local_ex() -> Iterator[LocalExecutor]:
    executor = LocalExecutor()
    yield executor
    executor.close()


@pytest.fixture(scope="module")
def local_found(local_ex: LocalExecutor, local_ws: Path) -> dict:
    return run_probe(local_ex, local_ws)


@local_only
def test_local_sandbox_processes_are_not_host_root(local_ex: LocalExecutor, local_ws: Path):
    uids, detail = sandbox_host_uids(local_ex, local_ws)
    assert uids, detail
    assert 0 not in uids, f"sandboxed processes run as host uids {sorted(set(uids))}"
    if os.getuid() != 0:
        assert set(uids) == {os.getuid()}  # not root: the user's own uid, as before


@local_only
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_local_privileged_attack_is_refused(local_found: dict, attack: str) -> None:
    assert local_found[attack] != "allowed", f"{ATTACKS[attack]}: {local_found}"


def assert_memory_clean(seen: str) -> None:
    assert seen.startswith(("clean", "unreadable")), seen
    if seen.startswith("clean"):
        assert int(seen.split()[2]) > 0, seen  # something was read, or it proves nothing


@local_only
def test_local_bwrap_memory_names_no_host_path(local_ex: LocalExecutor, local_ws: Path) -> None:
    """bwrap's init shares the command's uid: /proc/1/mem opens even with ptrace refused."""
    assert_memory_clean(
        memory_leak(local_ex, local_ws, [str(local_ws.parent.parent), local_ws.name])
    )


@local_only
def test_local_proc_sys_and_sys_are_read_only_or_absent(
    local_ex: LocalExecutor, local_ws: Path
) -> None:
    probe = "grep -E ' /proc/sys | /sys ' /proc/self/mounts; ls -A /sys 2>/dev/null | wc -l"
    res = local_ex.run(probe, cwd=local_ws)
    lines = res.output.splitlines()
    for line in lines[:-1]:
        assert " ro," in f" {line.split()[3]},", line
    assert lines and lines[-1].strip() == "0", res.output  # /sys is not there at all


@local_only
def test_local_sandbox_still_writes_its_workspace_and_tmp(
    local_ex: LocalExecutor, local_ws: Path
) -> None:
    """The unprivileged uid owns what it must write: files the host made there included."""
    (local_ws / "host_made.txt").write_text("from the host\n")
    (local_ws / "sub").mkdir(exist_ok=True)
    (local_ws / "sub" / "deep.txt").write_text("deep\n")
    script = (
        "echo more >> host_made.txt && echo x > sub/deep.txt && echo t > /tmp/t && cat /tmp/t"
        " && mkdir -p new/dir && echo y > new/dir/f && rm sub/deep.txt && id -u"
    )
    res = local_ex.run(script, cwd=local_ws)
    assert res.ok, res.output
    assert (local_ws / "host_made.txt").read_text() == "from the host\nmore\n"
    assert (local_ws / "new" / "dir" / "f").read_text() == "y\n"
    assert not (local_ws / "sub" / "deep.txt").exists()


docker_only = pytest.mark.skipif(not docker_ready(), reason="no dockerd or sandbox image")


@pytest.fixture(scope="module")
def docker_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docker-ws")


@pytest.fixture(scope="module")
def docker_ex(docker_ws: Path):  # noqa: ANN201
    from mlagent_tui.core.sandbox.docker import DockerExecutor

    executor = DockerExecutor(docker_ws, mem_mb=512)
    yield executor
    executor.close()


@pytest.fixture(scope="module")
def docker_found(docker_ex, docker_ws: Path) -> dict:  # noqa: ANN001
    return run_probe(docker_ex, docker_ws)


@docker_only
@pytest.mark.docker
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_docker_privileged_attack_is_refused(docker_found: dict, attack: str) -> None:
    assert docker_found[attack] != "allowed", f"{ATTACKS[attack]}: {docker_found}"


@docker_only
@pytest.mark.docker
def test_docker_sandbox_processes_are_not_host_root(docker_ex, docker_ws: Path) -> None:  # noqa: ANN001
    uids, detail = sandbox_host_uids(docker_ex, docker_ws)
    assert uids and 0 not in uids, (uids, detail)


NOT_ROOT = r"""
import json, sys, tempfile
from pathlib import Path
from mlagent_tui.core.sandbox import hostuid
from mlagent_tui.core.sandbox.hostuid import UID_ENV, HostUidError, hand_over, sandbox_host_uid
from mlagent_tui.core.sandbox.local import LocalExecutor
from mlagent_tui.core.selftest.privilege import PROBE_SCRIPT, memory_leak, parse
from mlagent_tui.core.selftest.privilege import sandbox_host_uids
ws = Path(tempfile.mkdtemp()) / "workspaces" / "s1-session-id"
ws.mkdir(parents=True)
ex = LocalExecutor()
(ws / "probe.py").write_text(PROBE_SCRIPT)
found = parse(ex.run("python3 probe.py", cwd=ws).output)
uids, _ = sandbox_host_uids(ex, ws)
wrote = ex.run("echo inside > out.txt", cwd=ws).ok and (ws / "out.txt").read_text()
leak = memory_leak(ex, ws, [str(ws.parent.parent), ws.name])
out = {"found": found, "uids": uids, "isolation": ex.isolation, "wrote": wrote, "leak": leak}
print(json.dumps(out))
ex.close()
"""
NOBODY = 65534


def unprivileged_python() -> str | None:
    """An interpreter uid 65534 can run that imports this checkout (None: there is none)."""
    env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "HOME": "/tmp"}
    for exe in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        check = "import sys, mlagent_tui.core.sandbox.local; print(sys.version_info[:2])"
        try:
            proc = subprocess.run(
                [*drop, exe, "-c", check], env=env, capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if proc.returncode == 0 and proc.stdout.strip() == str(sys.version_info[:2]):
            return exe
    return None


@local_only
def test_local_sandbox_of_a_non_root_user_keeps_that_users_uid() -> None:
    """Not root: the user's own uid is unprivileged, and the filter and /proc/sys still hold."""
    if os.getuid() != 0:
        pytest.skip("needs root to become another user")
    exe = unprivileged_python()
    if exe is None:
        pytest.skip("no Python runtime that uid 65534 can reach")
    env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "HOME": "/tmp"}
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    proc = subprocess.run(
        [*drop, exe, "-c", NOT_ROOT], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert set(out["uids"]) == {NOBODY}, out
    assert f"host uid {NOBODY}" in out["isolation"], out
    assert out["wrote"] == "inside\n", out
    assert_memory_clean(out["leak"])
    allowed = [k for k in ATTACKS if out["found"].get(k) == "allowed"]
    assert out["found"] and not allowed, out


def test_hand_over_never_follows_a_link(tmp_path: Path) -> None:
    """A link the sandbox left in its workspace must not hand the host file it names over."""
    if os.getuid() != 0:
        pytest.skip("only root can chown")
    host = tmp_path / "host.txt"
    host.write_text("host")
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "f.txt").write_text("x")
    (ws / "link").symlink_to(host)
    (ws / "dirlink").symlink_to(tmp_path)
    os.link(host, ws / "hardlink")
    hand_over(ws, 2_000_000_123)
    assert host.stat().st_uid == 0 and tmp_path.stat().st_uid == 0
    for path in (ws, ws / "a", ws / "a" / "b", ws / "a" / "b" / "f.txt"):
        assert (path.stat().st_uid, path.stat().st_gid) == (2_000_000_123, 2_000_000_123)
    assert os.lstat(ws / "link").st_uid == 2_000_000_123


def test_a_bad_sandbox_uid_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.getuid() != 0:
        pytest.skip("the sandbox uid is only chosen for root")
    for value, message in [("abc", "not a number"), ("0", "unprivileged"), ("-5", "unprivileged")]:
        monkeypatch.setenv(UID_ENV, value)
        with pytest.raises(HostUidError, match=message):
            sandbox_host_uid()
    monkeypatch.setenv(UID_ENV, "123456")
    assert sandbox_host_uid() == 123456


def test_default_sandbox_uid_refuses_one_that_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.getuid() != 0:
        pytest.skip("the sandbox uid is only chosen for root")
    monkeypatch.delenv(UID_ENV, raising=False)
    monkeypatch.setattr(hostuid, "_lines", lambda path: ["mallory:x:2000000000:7::/:/bin/sh"])
    with pytest.raises(HostUidError, match="mallory"):
        sandbox_host_uid()


@local_only
def test_root_without_a_staging_namespace_says_it_runs_as_host_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if os.getuid() != 0:
        pytest.skip("only root drops to the sandbox uid")
    monkeypatch.setattr(hostuid.Staging, "supported", lambda self: False)
    with pytest.warns(UserWarning, match="host root"):
        executor = LocalExecutor()
    try:
        assert "host root" in executor.isolation
        assert executor.run("true", cwd=tmp_path).ok
    finally:
        executor.close()


@local_only
def test_a_workspace_that_cannot_be_handed_over_is_a_clear_refusal(
    local_ex: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that refuses chown (as root): one line, exit 126, nothing run."""
    if os.getuid() != 0:
        pytest.skip("only root hands workspaces over")

    def refuse(*_args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(hostuid.os, "fchown", refuse)
    res = local_ex.run("touch ran.txt", cwd=tmp_path)
    assert res.exit_code == 126 and "cannot hand the workspace" in res.output, res.output
    assert not (tmp_path / "ran.txt").exists()


def test_uid_probe_waits_past_the_root_launcher_for_the_sandboxed_command() -> None:
    """The launcher (env, setpriv) carries the command line as root before it drops the uid.

    Seen in that window it read as "sandboxed processes are host root" and a healthy node was
    left out of a cluster; the probe reads the sandboxed command itself.
    """
    if os.getuid() != 0:
        pytest.skip("needs root to drop to another uid")
    marker = f"mlagent-uid-probe-{os.getpid()}"
    drop = f"setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups"
    sleeper = f"{drop} {sys.executable} -c 'import time; time.sleep(3)' {marker}"
    proc = subprocess.Popen(["/bin/sh", "-c", f"sleep 1; exec {sleeper}", marker])
    try:
        uids = host_uids(marker)
    finally:
        proc.kill()
        proc.wait()
    assert uids and set(uids) == {NOBODY}, uids
