"""Snapshots and journals written in the earlier forms keep reading, and RelPath's rules.

Manifests were first a bare {path: hash} object, then version 2 (the whole listing with what
was skipped); they are now version 3 (a delta against a shared listing object). A home holding
the older forms must restore, fork, diff and undo as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlagent_tui.core.session import BudgetLimits, Session, SessionConfig
from mlagent_tui.core.workspace import Workspace, check_rel

from .agent_helpers import research, write_replay


def as_version_2(meta: Path) -> None:
    """Rewrite every manifest of a snapshots area as the version-2 code wrote it."""
    for path in (meta / "snapshots").glob("*.json"):
        manifest = Workspace(meta.parent, meta).load_manifest(path.stem)
        data = {"files": manifest.files, "skipped": manifest.skipped, "skipped_more": 0}
        path.write_text(json.dumps({"version": 2, **data}, sort_keys=True))


def test_version_1_and_2_manifests_restore_diff_and_snapshot_on(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "meta")
    a, b = ws.store_object(b"a = 1\n"), ws.store_object(b"a = 2\n")
    snaps = ws.meta / "snapshots"
    (snaps / "step-0000.json").write_text(json.dumps({"a.py": a, "sub/b.txt": b}))
    v2 = {"files": {"a.py": b}, "skipped": {"big.bin": "too large"}, "skipped_more": 0}
    (snaps / "step-0001.json").write_text(json.dumps({"version": 2, **v2}, sort_keys=True))
    (root / "stray.txt").write_text("x")
    ws.restore("step-0000")
    assert sorted(ws.files()) == ["a.py", "sub/b.txt"]
    assert "-a = 1" in ws.diff("step-0000", "step-0001")
    assert ws.skipped("step-0001") == {"big.bin": "too large"}
    ws.snapshot("step-0002")  # after an old manifest: a fresh base
    assert ws.manifest("step-0002") == {"a.py": a, "sub/b.txt": b}
    assert ws.history("a.py") == [a, b, a]


def test_an_old_journal_row_undoes(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "meta")
    (root / "a.py").write_text("old\n")
    before = ws.store_object(b"old\n")
    ws.write("a.py", "new\n")
    row = {"path": "a.py", "before_hash": before, "after_hash": ws.file_hash("a.py")}
    (ws.meta / "edits.jsonl").write_text(json.dumps(row) + "\n")  # no before_kept: old rows
    ws.undo_last_edit()
    assert (root / "a.py").read_text() == "old\n"


def test_a_home_with_version_2_manifests_forks_and_resumes(tmp_path, home, store, tiny_task):
    steps = [
        research("Write File", {"file_name": "a.py", "content": "print(1)\n"}),
        research("Write File", {"file_name": "a.py", "content": "print(2)\n"}),
        research("Write File", {"file_name": "b.py", "content": "print(3)\n"}),
    ]
    replay = write_replay(tmp_path / "r.jsonl", steps)
    config = SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}", max_steps=2)
    session = Session.create(home, store, config)
    assert session.run().status == "budget"
    as_version_2(home.snapshots(session.id))
    (session.workspace.root / "a.py").write_text("changed since\n")
    child = Session.fork(home, store, session.id, 1)
    assert (child.workspace.root / "a.py").read_text() == "print(1)\n"
    resumed = Session.resume(home, store, session.id, limits=BudgetLimits(max_steps=1))
    assert (resumed.workspace.root / "a.py").read_text() == "print(2)\n"
    assert resumed.run().steps == 3
    assert (resumed.workspace.root / "b.py").read_text() == "print(3)\n"


@pytest.mark.parametrize(
    "good", ["a", "a/b.py", "dir with space/x", ".hidden", "a..b", "...", "ünï/cödé", "\udcff.txt"]
)
def test_relpath_accepts_normal_names(good: str) -> None:
    assert check_rel(good) == good


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "..",
        "../x",
        "a/../../x",
        "/etc/passwd",
        "//x",
        "a//b",
        "./a",
        "a/",
        "a/.",
        "..\\..\\x",
        "a\x00b",
        "a\nb",
        "x" * 256,
        "a/" * 2100,
        "\ud800",
    ],
)
def test_relpath_refuses(bad: str) -> None:
    with pytest.raises(ValueError):
        check_rel(bad)
