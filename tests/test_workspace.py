"""Path guard, snapshots, diffs, undo."""

from __future__ import annotations

import pytest

from mlagent_tui.core.workspace import Workspace, WorkspaceError


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "train.csv").write_text("a,b\n1,2\n")
    return Workspace(root, tmp_path / "meta", read_only=["train.csv"])


def test_guard_refuses_paths_outside(ws: Workspace, tmp_path) -> None:
    for bad in ["../x", "/etc/passwd", "sub/../../x", str(tmp_path / "meta" / "objects")]:
        with pytest.raises(WorkspaceError, match="outside the workspace"):
            ws.resolve(bad)
    assert ws.resolve("/workspace/a.py") == ws.root / "a.py"
    (ws.root / "link").symlink_to("/etc")
    with pytest.raises(WorkspaceError):
        ws.resolve("link/passwd")


def test_read_only_files_cannot_be_written(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="read-only"):
        ws.write("train.csv", "x")
    ws.resolve("train.csv")  # reading is fine


def test_snapshots_diff_and_restore(ws: Workspace) -> None:
    ws.write("a.py", "print(1)\n")
    first = ws.snapshot("step-0001")
    ws.write("a.py", "print(2)\n")
    ws.write("b.py", "x = 1\n")
    ws.snapshot("step-0002")
    diff = ws.diff("step-0001", "step-0002")
    assert "-print(1)" in diff and "+print(2)" in diff and "+++ b/b.py" in diff
    assert len(ws.history("a.py")) == 2
    ws.restore("step-0001")
    assert (ws.root / "a.py").read_text() == "print(1)\n"
    assert not (ws.root / "b.py").exists()
    assert set(first) == {"a.py", "train.csv"}
    with pytest.raises(WorkspaceError, match="no snapshot"):
        ws.manifest("step-9999")


def test_undo_last_edit(ws: Workspace) -> None:
    ws.write("a.py", "v1\n")
    ws.write("a.py", "v2\n")
    ws.write("b.py", "new\n")
    ws.undo_last_edit("a.py")
    assert (ws.root / "a.py").read_text() == "v1\n"
    ws.undo_last_edit()
    assert not (ws.root / "b.py").exists()
    ws.undo_last_edit()
    assert not (ws.root / "a.py").exists()
    with pytest.raises(WorkspaceError, match="no edit to undo"):
        ws.undo_last_edit()


def test_snapshots_are_content_addressed(ws: Workspace) -> None:
    ws.snapshot("one")
    ws.snapshot("two")
    objects = list(ws.objects.rglob("*"))
    # train.csv stored once, and one listing of the tree that both manifests share
    assert len([p for p in objects if p.is_file()]) == 2
