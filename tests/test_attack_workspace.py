"""Attacks on the host's handling of a workspace: links, races, huge files, relative paths.

Every host write into a workspace (write, undo, restore) must refuse to follow a link the
agent could have made, and so must every host read. Run as root these are the cases that
overwrote host files; each test asserts the host file outside the workspace is unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlagent_tui.core.workspace import Workspace, WorkspaceError
from mlagent_tui.core.workspace import workspace as workspace_mod

from .conftest import HOST_TEXT, ROOT

pytestmark = pytest.mark.adversarial


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "train.py").write_text("print('train')\n")
    (root / "sub").mkdir()
    (root / "sub" / "a.py").write_text("a = 1\n")
    return Workspace(root, tmp_path / "meta")


def make_link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    else:
        path.unlink(missing_ok=True)
    path.symlink_to(target)


def test_restore_replaces_a_link_instead_of_writing_through_it(ws: Workspace, host_file) -> None:
    ws.snapshot("step-0000")
    make_link(ws.root / "train.py", host_file)
    ws.restore("step-0000")
    assert host_file.read_text() == HOST_TEXT
    assert not (ws.root / "train.py").is_symlink()
    assert (ws.root / "train.py").read_text() == "print('train')\n"


def test_restore_replaces_a_linked_parent_folder(ws: Workspace, host_file) -> None:
    ws.snapshot("step-0000")
    (host_file.parent / "a.py").write_text(HOST_TEXT)
    make_link(ws.root / "sub", host_file.parent)
    ws.restore("step-0000")
    assert (host_file.parent / "a.py").read_text() == HOST_TEXT
    assert host_file.read_text() == HOST_TEXT
    assert not (ws.root / "sub").is_symlink()
    assert (ws.root / "sub" / "a.py").read_text() == "a = 1\n"


def test_restore_removes_stray_links_without_following_them(ws: Workspace, host_file) -> None:
    ws.snapshot("step-0000")
    (ws.root / "evil").symlink_to(host_file)
    (ws.root / "evil_dir").symlink_to(host_file.parent)
    ws.restore("step-0000")
    assert not os.path.lexists(ws.root / "evil") and not os.path.lexists(ws.root / "evil_dir")
    assert host_file.read_text() == HOST_TEXT


def test_undo_never_writes_through_a_link(ws: Workspace, host_file) -> None:
    ws.write("train.py", "print('edited')\n")
    make_link(ws.root / "train.py", host_file)
    ws.undo_last_edit()
    assert host_file.read_text() == HOST_TEXT
    assert (ws.root / "train.py").read_text() == "print('train')\n"
    ws.write("new.py", "x = 1\n")
    make_link(ws.root / "new.py", host_file)
    ws.undo_last_edit()  # the edit created new.py: undo removes the link, not its target
    assert not os.path.lexists(ws.root / "new.py") and host_file.read_text() == HOST_TEXT


def test_write_replaces_a_link_and_refuses_a_linked_folder(ws: Workspace, host_file) -> None:
    make_link(ws.root / "train.py", host_file)
    ws.write("train.py", "print('mine')\n")
    assert host_file.read_text() == HOST_TEXT
    assert (ws.root / "train.py").read_text() == "print('mine')\n"
    make_link(ws.root / "sub", host_file.parent)
    with pytest.raises(WorkspaceError):
        ws.write("sub/secret.txt", "overwritten")
    assert host_file.read_text() == HOST_TEXT


def test_reads_never_follow_links(ws: Workspace, host_file) -> None:
    (ws.root / "evil").symlink_to(host_file)
    assert ws.file_hash("evil") is None
    with pytest.raises(WorkspaceError, match="link"):
        ws.read_bytes("evil")
    manifest = ws.snapshot("step-0001")
    assert "evil" not in manifest
    for data in (ws.load_object(d) for d in manifest.values()):
        assert HOST_TEXT.encode() not in data


SWAPPER = """
import os, sys
name, target = sys.argv[1], sys.argv[2]
folder = os.path.dirname(name)
i = 0
while True:
    i += 1
    link, plain = f"{folder}/.l{i}", f"{folder}/.f{i}"
    try:
        os.symlink(target, link)
        os.rename(link, name)
        with open(plain, "w") as fh:
            fh.write("plain")
        os.rename(plain, name)
    except OSError:
        pass
"""


def test_write_and_restore_race_with_a_link_swapper(ws: Workspace, host_file) -> None:
    """A daemon swaps train.py between a file and a link while the host writes it."""
    ws.snapshot("step-0000")
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws.root / "train.py"), str(host_file)]
    )
    try:
        time.sleep(0.1)
        deadline = time.monotonic() + 3
        rounds = 0
        while time.monotonic() < deadline and rounds < 400:
            rounds += 1
            try:
                ws.write("train.py", f"print({rounds})\n")
            except WorkspaceError:
                pass
            ws.restore("step-0000")
            try:
                data = ws.read_bytes("train.py")
            except WorkspaceError:
                continue
            assert HOST_TEXT.encode() not in data
    finally:
        swapper.kill()
        swapper.wait()
    assert host_file.read_text() == HOST_TEXT


# -- snapshots of huge files ------------------------------------------------------------------
def test_snapshot_skips_big_files_and_records_it(ws: Workspace, monkeypatch) -> None:
    monkeypatch.setattr(workspace_mod, "MAX_SNAPSHOT_FILE_BYTES", 100_000)
    monkeypatch.setattr(workspace_mod, "MAX_SNAPSHOT_TOTAL_BYTES", 250_000)
    before = ws.store_bytes()
    for step in range(3):
        (ws.root / "huge.bin").write_bytes(os.urandom(300_000))
        for n in range(4):
            (ws.root / f"mid{n}.bin").write_bytes(os.urandom(90_000))
        ws.snapshot(f"step-{step:04d}")
        skipped = ws.skipped(f"step-{step:04d}")
        assert "huge.bin" in skipped and "limit" in skipped["huge.bin"]
        assert sum(f"mid{n}.bin" in skipped for n in range(4)) >= 1  # the total is capped
        assert "huge.bin" not in ws.manifest(f"step-{step:04d}")
    assert ws.store_bytes() - before <= 3 * 250_000
    # a restore keeps what it could not snapshot instead of deleting it
    ws.restore("step-0001")
    assert (ws.root / "huge.bin").stat().st_size == 300_000


def test_snapshots_stop_growing_once_the_store_is_full(ws: Workspace, monkeypatch) -> None:
    monkeypatch.setattr(workspace_mod, "MAX_OBJECT_STORE_BYTES", ws.store_bytes() + 500_000)
    for step in range(5):
        (ws.root / "churn.bin").write_bytes(os.urandom(200_000))  # new content every step
        ws.snapshot(f"step-{step:04d}")
    assert ws.store_bytes() <= workspace_mod.MAX_OBJECT_STORE_BYTES
    assert "full" in ws.skipped("step-0004")["churn.bin"]
    assert "train.py" in ws.manifest("step-0004")  # unchanged content costs nothing new


# -- item 7: a relative --workspace is the caller's, not the task folder's -------------------------
def test_tasks_prepare_resolves_a_relative_workspace(tmp_path: Path, tiny_task: Path) -> None:
    caller = tmp_path / "caller"
    caller.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "tasks", "prepare", "--task-dir", str(tiny_task)]
        + ["--workspace", "rel-ws", "--json"],
        cwd=caller,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (caller / "rel-ws" / "train.csv").is_file()
    assert not (tiny_task / "rel-ws").exists()
