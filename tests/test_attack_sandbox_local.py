"""Attacks on the local (bubblewrap) backend, run as whoever runs the suite (root in CI).

Each asserts that the attack fails inside and that nothing on the host changed.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox.local import LocalExecutor

from .conftest import bwrap_ready

pytestmark = [
    pytest.mark.adversarial,
    pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap is not usable here"),
]


@pytest.fixture
def ex():  # noqa: ANN201
    executor = LocalExecutor()
    yield executor
    executor.close()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace laid out as a session's: HOME/workspaces/SESSION-ID."""
    path = tmp_path / "mlhome" / "workspaces" / "20261124-010203-abcdef"
    path.mkdir(parents=True)
    (path / "evaluate.py").write_text("print('the evaluator')\n")
    return path


def test_root_cannot_remount_the_host(ex: LocalExecutor, ws: Path) -> None:
    marker = Path(f"/usr/mlagent-escape-{secrets.token_hex(4)}")
    script = f"mount -o remount,rw,bind /usr && touch {marker}; mount -o remount,rw / ; true"
    res = ex.run(script, cwd=ws)
    assert not marker.exists()
    assert "ESCAPED" not in res.output


def test_no_capabilities_and_not_root(ex: LocalExecutor, ws: Path) -> None:
    res = ex.run("id -u; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; unshare -U true", cwd=ws)
    lines = res.output.splitlines()
    assert lines[0].strip() != "0"
    caps = [ln.split()[1] for ln in lines if ln.startswith("Cap")]
    assert caps and all(int(c, 16) == 0 for c in caps), res.output
    assert "unshare" in res.output  # making a user namespace inside is refused


def test_cli_sandbox_run_cannot_escape_as_root(ws: Path) -> None:
    marker = Path(f"/usr/mlagent-cli-escape-{secrets.token_hex(4)}")
    cmd = [sys.executable, "-m", "mlagent_tui", "sandbox", "run", "--workspace", str(ws), "--"]
    subprocess.run(
        [*cmd, "sh", "-c", f"mount -o remount,rw,bind /usr; touch {marker}"],
        capture_output=True,
        timeout=60,
    )
    assert not marker.exists()


def test_host_paths_are_not_visible(ex: LocalExecutor, ws: Path) -> None:
    """mountinfo, bwrap's command line and environment name neither the home nor the session."""
    probe = (
        "cat /proc/self/mountinfo /proc/self/mounts; for p in /proc/[0-9]*; do "
        "tr '\\0' ' ' < $p/cmdline; tr '\\0' ' ' < $p/environ; readlink $p/cwd $p/root; "
        "done 2>/dev/null; env; pwd"
    )
    res = ex.run(probe, cwd=ws)
    home = ws.parent.parent
    assert res.ok and "/workspace" in res.output
    assert str(home) not in res.output
    assert ws.name not in res.output
    assert "mlhome" not in res.output


def test_read_only_files_cannot_be_changed(ex: LocalExecutor, ws: Path) -> None:
    attacks = [
        "chmod 666 evaluate.py",
        "echo hacked > evaluate.py",
        "rm -f evaluate.py",
        "mv evaluate.py gone.py",
        "python -c \"import os; os.utime('evaluate.py', (0, 0))\"",
    ]
    before = (ws / "evaluate.py").stat()
    for attack in attacks:
        ex.run(attack, cwd=ws, read_only=["evaluate.py"])
    after = (ws / "evaluate.py").stat()
    assert (ws / "evaluate.py").read_text() == "print('the evaluator')\n"
    assert (before.st_mode, before.st_mtime_ns) == (after.st_mode, after.st_mtime_ns)
    assert not (ws / "gone.py").exists()


def test_read_only_entry_replaced_by_a_link_is_not_mounted(
    ex: LocalExecutor, ws: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    (ws / "evaluate.py").unlink()
    (ws / "evaluate.py").symlink_to(secret)
    res = ex.run("cat evaluate.py", cwd=ws, read_only=["evaluate.py"])
    assert res.exit_code != 0 and "host secret" not in res.output
    assert "link" in res.output
    assert secret.read_text() == "host secret"


def test_tmp_is_bounded_and_counts_as_memory(ex: LocalExecutor, ws: Path) -> None:
    script = (
        "import os\nchunk = b'x' * (16 << 20)\nwith open('/tmp/fill', 'wb') as f:\n"
        "    for _ in range(64):\n        f.write(chunk); f.flush()\nprint('WROTE ALL')\n"
    )
    (ws / "fill.py").write_text(script)
    res = ex.run("python fill.py", cwd=ws, mem_mb=256, timeout_s=30)
    assert "WROTE ALL" not in res.output  # 1 GB never fits a 256 MB sandbox
    assert res.killed_reason == "memory" or "No space left" in res.output, res


def test_workspace_disk_limit_kills_with_reason_disk(ex: LocalExecutor, ws: Path) -> None:
    script = (
        "chunk = b'x' * (4 << 20)\nfor i in range(200):\n"
        "    with open(f'big{i % 40}.bin', 'wb') as f:\n"
        "        for _ in range(4): f.write(chunk)\nprint('WROTE ALL')\n"
    )
    (ws / "fill.py").write_text(script)
    res = ex.run("python fill.py", cwd=ws, disk_mb=64, timeout_s=60)
    assert res.killed_reason == "disk" and "WROTE ALL" not in res.output, res
    used = sum(p.stat().st_size for p in ws.iterdir() if p.is_file())
    assert used < 400 << 20


def test_one_big_file_is_a_disk_kill(ex: LocalExecutor, ws: Path) -> None:
    res = ex.run("head -c 300M /dev/zero > big.bin", cwd=ws, disk_mb=64, timeout_s=60)
    assert res.killed_reason == "disk"
    assert (ws / "big.bin").stat().st_size <= 80 << 20


def test_no_process_outlives_its_step(ex: LocalExecutor, ws: Path) -> None:
    marker = f"mlagent-daemon-{secrets.token_hex(4)}"
    daemon = f"setsid sh -c 'exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 &"
    res = ex.run(f'sh -c "{daemon}"; sleep 0.2; exit 0', cwd=ws)
    assert res.ok
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert not left.strip()


def test_files_written_inside_land_in_the_workspace(ex: LocalExecutor, ws: Path) -> None:
    """The overlay that hides the host path still writes straight into the real workspace."""
    (ws / "old.txt").write_text("old")
    (ws / "d").mkdir()
    (ws / "d" / "in.txt").write_text("in")
    script = (
        "echo new > new.txt && rm old.txt && mv d e && mkdir -p f/g && echo deep > f/g/h.txt"
        " && ln f/g/h.txt hard.txt && ln -s new.txt soft.txt && ls -a"
    )
    res = ex.run(script, cwd=ws)
    assert res.ok, res.output
    assert (ws / "new.txt").read_text() == "new\n" and not (ws / "old.txt").exists()
    assert (ws / "e" / "in.txt").read_text() == "in" and not (ws / "d").exists()
    assert (ws / "f" / "g" / "h.txt").read_text() == "deep\n"
    assert (ws / "hard.txt").read_text() == "deep\n" and os.readlink(ws / "soft.txt") == "new.txt"
    assert [p for p in ws.parent.iterdir() if p != ws] == []  # the overlay's folders are gone


def test_overlapping_runs_each_get_their_own_overlay(ex: LocalExecutor, ws: Path) -> None:
    """Rollouts run many commands at once, in sibling workspaces or in the same one."""
    from concurrent.futures import ThreadPoolExecutor

    other = ws.parent / "sibling"
    other.mkdir()
    jobs = [(ws if i % 3 else other, f"echo {i} > out{i}.txt; sleep 0.3") for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda job: ex.run(job[1], cwd=job[0]), jobs))
    assert all(r.ok for r in results), [r.output for r in results if not r.ok]
    for i, (where, _) in enumerate(jobs):
        assert (where / f"out{i}.txt").read_text() == f"{i}\n"
    assert sorted(p.name for p in ws.parent.iterdir()) == sorted([ws.name, "sibling"])
