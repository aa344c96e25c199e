"""Attacks on the host's cost per step: a workspace of very many files, or of very long names.

The agent decides how many files its workspace holds, and every step the host walks, hashes
and records them. Unbounded, 200k empty files cost 57 MB of manifest and ~1 MB of events per
file per step. These tests make 20k-30k files with the caps lowered and assert the step ends
with a clear error and the snapshot area and database grow by a bounded amount; and that an
unchanged large tree costs almost nothing per step.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.session import changes as session_changes
from mlagent_tui.core.workspace import Workspace
from mlagent_tui.core.workspace import workspace as workspace_mod
from mlagent_tui.tui.view import SessionView

from .agent_helpers import research, write_replay

pytestmark = pytest.mark.adversarial


def make_files(root: Path, count: int, name_len: int = 12) -> None:
    pad = "n" * max(0, name_len - 10)
    for i in range(count):
        folder = root / "many" / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:06d}{pad}.t").touch()


def area_bytes(folder: Path) -> int:
    return sum(os.lstat(os.path.join(d, n)).st_size for d, _, ns in os.walk(folder) for n in ns)


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def lower_caps(monkeypatch, files: int = 5_000, path_bytes: int = 1 << 20) -> None:
    monkeypatch.setattr(workspace_mod, "MAX_WORKSPACE_FILES", files, raising=False)
    monkeypatch.setattr(workspace_mod, "MAX_WORKSPACE_PATH_BYTES", path_bytes, raising=False)


def test_a_step_past_the_file_cap_is_an_error_with_bounded_cost(
    tmp_path, home, store, tiny_task, monkeypatch
):
    lower_caps(monkeypatch)
    monkeypatch.setattr(session_changes, "MAX_FILE_EVENTS_PER_STEP", 50, raising=False)
    steps = [research("Write File", {"file_name": f"n{i}.py", "content": "x\n"}) for i in (1, 2)]
    replay = write_replay(tmp_path / "r.jsonl", steps)
    config = SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}", max_steps=2)
    session = Session.create(home, store, config)
    make_files(session.workspace.root, 20_000)
    meta, db0 = home.snapshots(session.id), db_bytes(store.path)
    area0 = area_bytes(meta)
    session.run()
    finished = [e.payload for e in store.events(session.id, kinds=["action_finished"])]
    assert len(finished) == 2
    for payload in finished:
        assert not payload.ok
        assert "Error: the workspace holds over 5000 files and folders (the limit)" in (
            payload.observation
        )
    changed = store.events(session.id, kinds=["file_changed"])
    assert len(changed) <= 2 * 50
    summary = store.events(session.id, kinds=["file_changes_summarized"])
    assert summary and summary[0].payload.added > 4_000
    view = SessionView().apply_all(store.events(session.id))
    assert any("more files changed, not listed" in n for n in view.steps[1].notes)
    assert area_bytes(meta) - area0 < 1_000_000  # unbounded: ~2.5 MB of manifests
    assert db_bytes(store.path) - db0 < 2_000_000  # unbounded: one event per file
    # and the session goes on: the files it kept come back on a fork
    child = Session.fork(home, store, session.id, 2)
    assert (child.workspace.root / "n2.py").read_text() == "x\n"


def test_long_names_hit_the_path_bytes_cap(tmp_path, monkeypatch):
    lower_caps(monkeypatch, files=1_000_000, path_bytes=1 << 20)
    root = tmp_path / "ws"
    root.mkdir()
    make_files(root, 20_000, name_len=200)  # ~4 MB of names
    ws = Workspace(root, tmp_path / "meta")
    ws.snapshot("step-0001")
    manifest = ws.load_manifest("step-0001")
    assert manifest.over_limit and "file names total over 1 MB" in manifest.over_limit
    assert sum(len(p) for p in manifest.files) <= 1 << 20
    assert area_bytes(ws.meta) < 1_000_000


def test_an_unchanged_large_tree_costs_almost_nothing_per_step(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    make_files(root, 20_000)
    ws = Workspace(root, tmp_path / "meta")
    ws.snapshot("step-0001")
    first = area_bytes(ws.meta)
    assert first < 1_000_000  # a compressed listing (unbounded: 1.9 MB of JSON)
    (root / "one.py").write_text("x = 1\n")
    ws.snapshot("step-0002")
    ws.snapshot("step-0003")
    assert area_bytes(ws.meta) - first < 4_000
    assert ws.manifest("step-0003") == {
        **ws.manifest("step-0001"),
        "one.py": ws.file_hash("one.py"),
    }


def test_a_tree_that_drifts_is_rebased_and_reads_back(tmp_path, monkeypatch):
    from mlagent_tui.core.workspace import manifest as manifest_mod

    monkeypatch.setattr(manifest_mod, "REBASE_MIN", 4)
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "meta")
    expected = {}
    for step in range(12):
        (root / f"f{step}.py").write_text(f"{step}\n")
        if step % 3 == 2:
            (root / f"f{step - 1}.py").unlink()
        ws.snapshot(f"step-{step:04d}")
        expected[f"step-{step:04d}"] = {p.name for p in root.iterdir()}
    bases = {json.loads(p.read_text())["base"] for p in (ws.meta / "snapshots").glob("*.json")}
    assert len(bases) > 1  # the delta grew past the share and a new base was written
    for name, names in expected.items():
        assert set(Workspace(root, ws.meta).manifest(name)) == names
