"""Attacks an agent could try on the docker backend; each asserts it fails and the host holds.

Run as root in CI: that is the case where the workspace is chowned and where a hole reaches
the host. Every test uses a real dockerd and the real sandbox image.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox.docker import DockerExecutor
from mlagent_tui.core.sandbox.limits import tree_mb

from .conftest import require_docker

require_docker()

pytestmark = [pytest.mark.docker, pytest.mark.adversarial]

BASE_CMDS = ["/sbin/docker-init -- sleep infinity", "sleep infinity"]
ORIGINAL = "print('the real evaluator')\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "evaluate.py").write_text(ORIGINAL)
    (root / "evaluate.py").chmod(0o444)
    (root / "train.py").write_text("print('train')\n")
    return root


@pytest.fixture
def ex(ws: Path) -> Iterator[DockerExecutor]:
    executor = DockerExecutor(ws, mem_mb=256)
    yield executor
    executor.close()


def leftovers(ex: DockerExecutor) -> list[str]:
    """Processes in the container other than its init and `sleep infinity` (seen by docker)."""
    procs = ex.client.api.top(ex.container.id)["Processes"] or []
    return [p[-1] for p in procs if p[-1] not in BASE_CMDS]


def test_tmp_is_bounded_by_the_memory_limit(ex: DockerExecutor, ws: Path) -> None:
    fill = textwrap.dedent(
        """
        chunk = b"x" * (1 << 20)
        with open("/tmp/fill", "wb", buffering=0) as f:
            for mb in range(1, 1025):
                f.write(chunk)
                print("MB", mb, flush=True)
        print("DONE")
        """
    )
    res = ex.run(["python", "-c", fill], cwd=ws, timeout_s=120)
    written = [int(line.split()[1]) for line in res.output.splitlines() if line.startswith("MB ")]
    assert not res.ok and "DONE" not in res.output
    assert max(written, default=0) <= 256
    # /tmp's pages count against the memory limit: the step is killed, the filesystem is full,
    # or (on a busy machine, where the kernel reclaims first) the next allocation fails.
    bounded = ("No space left", "MemoryError", "Cannot allocate memory")
    assert res.killed_reason == "memory" or any(b in res.output for b in bounded), res.output[-500:]
    # Nothing went to the host's disk: the container's writable layer stays empty.
    upper = ex.client.api.inspect_container(ex.container.id)["GraphDriver"]["Data"]["UpperDir"]
    assert tree_mb(Path(upper)) < 5
    # The sandbox survives, and the next step starts with an empty /tmp and /dev/shm, even
    # after a step that left a link, a tree too deep to walk recursively, and shared memory.
    deep = "import os\nos.chdir('/tmp')\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\n"
    litter = "ln -s /etc /tmp/link && echo x > /dev/shm/left && python -c " + shlex.quote(deep)
    assert ex.run(litter, cwd=ws).ok
    after = ex.run("ls -A /tmp /dev/shm | grep -v : | grep -c . ; echo alive", cwd=ws)
    assert after.output.split() == ["0", "alive"], after.output


def test_nothing_outside_workspace_and_tmp_is_writable(ex: DockerExecutor, ws: Path) -> None:
    script = "for p in /var/tmp/x /home/sandbox/x /x /usr/x; do touch $p && echo WROTE $p; done"
    res = ex.run(script, cwd=ws)
    assert "WROTE" not in res.output, res.output


def test_workspace_disk_limit_kills_the_step(ex: DockerExecutor, ws: Path) -> None:
    fill = textwrap.dedent(
        """
        import os, time
        chunk = os.urandom(1 << 20)
        with open("big.bin", "wb", buffering=0) as f:
            for mb in range(1, 193):
                f.write(chunk)
                time.sleep(0.01)
        print("DONE")
        """
    )
    res = ex.run(["python", "-c", fill], cwd=ws, timeout_s=120, disk_mb=64)
    assert res.killed_reason == "disk" and not res.ok and res.exit_code != 0
    assert "DONE" not in res.output
    assert res.duration_s < 20
    assert tree_mb(ws) < 150
    assert leftovers(ex) == []


READ_ONLY_ATTACKS = [
    "chmod u+w evaluate.py && echo hacked > evaluate.py",
    "python -c \"open('evaluate.py', 'w').write('hacked')\"",
    "python -c \"open('evaluate.py', 'a').write('hacked')\"",
    "rm -f evaluate.py",
    "mv evaluate.py moved.py",
    "ln -sf /etc/passwd evaluate.py",
    "cp /dev/null evaluate.py",
    "echo hacked > x.py && python -c \"import os; os.rename('x.py', 'evaluate.py')\"",
    "echo hacked > x.py && python -c \"import os; os.replace('x.py', 'evaluate.py')\"",
    "touch -d 2001-01-01 evaluate.py",
    "chmod 777 evaluate.py",
]


@pytest.mark.parametrize("hide", [True, False], ids=["overlay", "plain-bind"])
def test_read_only_files_cannot_be_changed(ws: Path, hide: bool) -> None:
    (ws / "data").mkdir()
    (ws / "data" / "test.csv").write_text("id\n1\n")
    read_only = ["evaluate.py", "data/test.csv"]
    ex = DockerExecutor(ws, mem_mb=256, hide_host_path=hide)
    try:
        for round_ in range(2):
            for rel in read_only:
                target = ws / rel
                before, content = target.lstat(), target.read_text()
                for attack in READ_ONLY_ATTACKS:
                    attack = attack.replace("evaluate.py", rel)
                    res = ex.run(attack, cwd=ws, read_only=read_only)
                    assert res.exit_code != 0, (attack, res.output)
                    after = target.lstat()
                    assert stat.S_ISREG(after.st_mode), attack
                    assert (after.st_ino, after.st_mode, after.st_mtime) == (
                        before.st_ino,
                        before.st_mode,
                        before.st_mtime,
                    ), attack
                    assert target.read_text() == content, attack
            # Nor can the folder above a nested one be moved away and refilled.
            swap = "mv data data2 && mkdir data && echo hacked > data/test.csv"
            for attack in (swap, "rm -rf data"):
                res = ex.run(attack, cwd=ws, read_only=read_only)
                assert res.exit_code != 0, (attack, res.output)
                assert (ws / "data" / "test.csv").read_text() == "id\n1\n", attack
            # The host replaces a read-only file (a restore does): the new one is protected.
            fresh = ws / "evaluate.py.new"
            fresh.write_text(f"print('restored {round_}')\n")
            fresh.replace(ws / "evaluate.py")
        # Other files stay writable.
        assert ex.run("echo more >> train.py", cwd=ws, read_only=read_only).ok
    finally:
        ex.close()


def test_read_only_entries_that_are_links_or_odd_are_refused(
    ex: DockerExecutor, ws: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host data\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("outside\n")
    (ws / "link.py").symlink_to(secret)
    (ws / "sub").symlink_to(outside)
    (ws / "adir").mkdir()
    os.mkfifo(ws / "fifo")
    (ws / "twin.py").write_text("twin\n")
    os.link(ws / "twin.py", ws / "twin-link.py")
    entries = ["link.py", "sub/x.py", "adir", "fifo", "twin.py", "../host-secret.txt", str(secret)]
    for entry in entries:
        res = ex.run("echo ran > ran.txt; cat " + entry, cwd=ws, read_only=[entry])
        assert not res.ok and "refused" in res.output, (entry, res.output)
        assert not (ws / "ran.txt").exists(), entry
        assert "host data" not in res.output
    assert secret.read_text() == "host data\n"
    # A missing entry has nothing to protect: the command runs.
    assert ex.run("true", cwd=ws, read_only=["missing.py"]).ok


SURVIVORS = [
    "setsid sh -c 'sleep 301 &'; exit 0",
    "nohup sleep 302 >/dev/null 2>&1 & exit 0",
    textwrap.dedent(
        """\
        python - <<'EOF'
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for fd in (0, 1, 2):
                    os.close(fd)
                time.sleep(303)
            os._exit(0)
        EOF"""
    ),
]


def test_no_process_outlives_its_step(ex: DockerExecutor, ws: Path) -> None:
    for script in SURVIVORS:
        res = ex.run(script, cwd=ws, timeout_s=30)
        assert res.exit_code == 0 and not res.timed_out, (script, res.output)
        assert res.duration_s < 1.5, script  # a daemon holding the output does not hold the step
        assert leftovers(ex) == [], script
    res = ex.run("setsid sleep 304 & sleep 100", cwd=ws, timeout_s=2)
    assert res.timed_out and res.killed_reason == "timeout"
    assert leftovers(ex) == []


def test_killing_the_sandbox_itself_only_ends_the_step(ex: DockerExecutor, ws: Path) -> None:
    res = ex.run("kill -TERM 1; kill -9 -1; sleep 5", cwd=ws, timeout_s=20)
    assert not res.ok
    assert ex.run("echo alive", cwd=ws).output.strip() == "alive"


def test_workspace_is_given_back_to_the_host_user(ws: Path, tmp_path: Path) -> None:
    from mlagent_tui.core.sandbox.local import LocalExecutor

    canary = tmp_path / "canary.txt"
    canary.write_text("canary\n")
    os.chown(canary, 4242, 4242)
    (ws / "canary-link").symlink_to(canary)
    ex = DockerExecutor(ws, mem_mb=256)
    try:
        script = (
            "echo x > new.txt && mkdir -p d/e && echo y > d/e/f && chmod 6755 new.txt"
            f" && ln -s {canary} d/link && ln -s /etc/passwd d/passwd"
            " && touch \"$(printf 'bad\\377name')\" && mkfifo d/fifo"
        )
        assert ex.run(script, cwd=ws).ok
    finally:
        ex.close()
    assert (canary.stat().st_uid, canary.stat().st_gid) == (4242, 4242)
    for path in [ws, *ws.rglob("*")]:
        st = path.lstat()
        assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid()), path
        assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID) or path.is_dir(), path
    local = LocalExecutor()
    res = local.run("echo hi > from_local.txt && echo more >> new.txt && ls d/e", cwd=ws)
    assert res.ok, res.output
    assert (ws / "from_local.txt").read_text() == "hi\n"


CHILD = """
import sys, time
from pathlib import Path
from mlagent_tui.core.sandbox.docker import DockerExecutor
ws = Path(sys.argv[1])
ex = DockerExecutor(ws)
ex.run("echo hi > child.txt", cwd=ws)
print(ex.container.id, flush=True)
time.sleep(600)
"""


def _crashed_session(ws: Path) -> str:
    """Start a docker session in a child process and kill -9 it; return its container id."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(ws)], stdout=subprocess.PIPE)
    assert child.stdout is not None
    cid = child.stdout.readline().decode().strip()
    child.kill()
    child.wait()
    assert cid
    return cid


def _container_exists(cid: str) -> bool:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", "--filter", f"id={cid}"],
        capture_output=True,
        text=True,
    ).stdout
    return cid in out


def test_a_crashed_sessions_container_is_removed_on_the_next_start(ws: Path) -> None:
    cid = _crashed_session(ws)
    assert _container_exists(cid)
    ex = DockerExecutor(ws, mem_mb=256)
    try:
        assert not _container_exists(cid)
        assert ex.run("cat child.txt", cwd=ws).output.strip() == "hi"
    finally:
        ex.close()
    assert all(p.lstat().st_uid == os.getuid() for p in [ws, *ws.rglob("*")])


def test_release_workspace_after_a_crash(ws: Path) -> None:
    from mlagent_tui.core.sandbox.docker import release_workspace

    cid = _crashed_session(ws)
    assert release_workspace(ws)
    assert not _container_exists(cid)
    assert all(p.lstat().st_uid == os.getuid() for p in [ws, *ws.rglob("*")])
    assert not list(ws.parent.glob(".mlagent-overlay-*"))


def test_a_live_sandbox_is_never_taken_over(ex: DockerExecutor, ws: Path) -> None:
    from mlagent_tui.core.sandbox.docker import SandboxBusy, release_workspace

    assert ex.run("true", cwd=ws).ok
    with pytest.raises(SandboxBusy):
        DockerExecutor(ws)
    assert not release_workspace(ws)
    assert ex.run("echo still", cwd=ws).output.strip() == "still"


PROBE = r"""
mount -o remount,rw / 2>/dev/null && echo ESCAPE remount-root
mount -o remount,rw,bind /usr 2>/dev/null && echo ESCAPE remount-usr
mount -o remount,rw /workspace/evaluate.py 2>/dev/null && echo ESCAPE remount-ro-file
unshare -Ur true 2>/dev/null && echo ESCAPE userns
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status
echo UID $(id -u) GID $(id -g)
python -c "
import socket
try:
    socket.create_connection(('1.1.1.1', 53), timeout=2)
    print('ESCAPE network')
except OSError:
    pass
"
"""


def test_no_privilege_and_no_network(ex: DockerExecutor, ws: Path) -> None:
    res = ex.run(PROBE, cwd=ws, read_only=["evaluate.py"])
    assert "ESCAPE" not in res.output, res.output
    fields = dict(line.split(":\t") for line in res.output.splitlines() if ":\t" in line)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap], 16) == 0, (cap, fields[cap])
    assert fields["NoNewPrivs"].strip() == "1"
    uid_line = next(line for line in res.output.splitlines() if line.startswith("UID "))
    assert uid_line.split()[1] != "0" and uid_line.split()[3] != "0"


LEAKS = (
    "cat /proc/self/mountinfo; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; "
    "tr '\\0' ' ' < $p/environ; done 2>/dev/null; env; pwd"
)


def test_no_host_path_is_visible_inside(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("the per-step overlay that hides host paths needs root")
    home, sid = tmp_path / "home-x7q", "20250101-000000-abc123"
    ws = home / "workspaces" / sid
    ws.mkdir(parents=True)
    (ws / "evaluate.py").write_text(ORIGINAL)
    ex = DockerExecutor(ws, mem_mb=256)
    try:
        assert ex.hides_host_path and ex.mounts is not None
        res = ex.run(LEAKS, cwd=ws, read_only=["evaluate.py"])
        assert res.ok and " /workspace " in res.output
        for secret in (str(tmp_path), "home-x7q", sid, ex.mounts.root.name, ex.label[:16]):
            assert secret not in res.output, secret
    finally:
        ex.close()


def test_each_step_sees_the_host_changes_of_the_last(ex: DockerExecutor, ws: Path) -> None:
    """The overlay is fresh each step: no stale (or negative) cache of the workspace."""
    assert "No such file" in ex.run("cat later.txt", cwd=ws).output
    (ws / "later.txt").write_text("from the host\n")
    (ws / "train.py").write_text("print('rewritten')\n")
    res = ex.run("cat later.txt train.py && rm later.txt && mkdir -p a/b && echo z > a/b/c", cwd=ws)
    assert res.output.split("\n")[:2] == ["from the host", "print('rewritten')"], res.output
    assert not (ws / "later.txt").exists() and (ws / "a" / "b" / "c").read_text() == "z\n"
    assert not list(ws.parent.glob(".mlagent-overlay-*/work/work/*"))
