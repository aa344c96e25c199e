"""Attacks through stored data: a manifest, an undo journal row or a bundle that names a path
outside the workspace (`../../escape`, an absolute path) or an object outside the store.

The host acts on these later (fork restores a manifest, undo replays the journal, landing a
bundle restores its last snapshot), so whoever can alter them must not be able to make the
host write, delete or read outside the session's workspace. Each test tampers the data, runs
the host action and asserts nothing outside changed, and that the refusal is one clear line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlagent_tui.core.home import Home
from mlagent_tui.core.scale import Relocation, export_session, land_session
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store
from mlagent_tui.core.workspace import Workspace, WorkspaceError

from .agent_helpers import research, write_replay
from .conftest import HOST_TEXT

pytestmark = pytest.mark.adversarial

ESCAPE = "../../escape"


def outside_targets(ws_root: Path, tmp_path: Path) -> list[Path]:
    """Where the tampered names would land if the host wrote them."""
    return [(ws_root / ESCAPE).resolve(), tmp_path / "abs-escape"]


def tamper_manifest(meta: Path, name: str, tmp_path: Path, digest: str) -> None:
    """Add the escaping names to a stored snapshot manifest (any format version)."""
    path = meta / "snapshots" / f"{name}.json"
    data = json.loads(path.read_text())
    evil = {ESCAPE: digest, str(tmp_path / "abs-escape"): digest}
    if "files" in data and isinstance(data["files"], dict):
        data["files"].update(evil)
    if "changes" in data and isinstance(data["changes"], dict):
        data["changes"].update(evil)
    if "version" not in data:
        data.update(evil)
    path.write_text(json.dumps(data))


def any_digest(ws: Workspace) -> str:
    return next(p.name for p in ws.objects.rglob("*") if p.is_file() and len(p.name) == 64)


def write_session(tmp_path: Path, home: Home, store: Store, task: Path) -> Session:
    replay = write_replay(
        tmp_path / "replay.jsonl",
        [research("Write File", {"file_name": "a.py", "content": "print(1)\n"})],
    )
    config = SessionConfig(task_dir=str(task), model=f"replay:{replay}", max_steps=1)
    session = Session.create(home, store, config)
    session.run()
    return session


def test_fork_of_a_tampered_manifest_writes_nothing_outside(tmp_path, home, store, tiny_task):
    parent = write_session(tmp_path, home, store, tiny_task)
    ws = Workspace(home.workspace(parent.id), home.snapshots(parent.id))
    tamper_manifest(ws.meta, "step-0001", tmp_path, any_digest(ws))
    targets = outside_targets(home.workspace("x" * 8), tmp_path)
    with pytest.raises(Exception, match=r"(?i)refus|damaged|not a normalised|absolute") as err:
        Session.fork(home, store, parent.id, 1)
    assert "\n" not in str(err.value).strip()
    for target in targets:
        assert not target.exists(), target


def test_a_tampered_object_name_reads_no_host_file(tmp_path, host_file):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("a\n")
    ws = Workspace(root, tmp_path / "meta")
    ws.snapshot("step-0000")
    path = ws.meta / "snapshots" / "step-0000.json"
    data = json.loads(path.read_text())
    # objects/<2>/<digest>: a digest of dots climbs out of the store to the host's file
    sneaky = "../" * (len(ws.objects.parts) + 2) + str(host_file).lstrip("/")
    files = data["files"] if "files" in data else data.setdefault("changes", {})
    files["leak.txt"] = sneaky
    path.write_text(json.dumps(data))
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(WorkspaceError, match=r"(?i)damaged|not a content hash"):
        Workspace(fresh, tmp_path / "meta2").restore("step-0000", source=ws)
    assert not (fresh / "leak.txt").exists()


@pytest.mark.parametrize("before", ["object", "none"])
def test_undo_of_a_tampered_journal_row_touches_nothing_outside(tmp_path, host_file, before):
    root = tmp_path / "home" / "workspaces" / "s1"
    root.mkdir(parents=True)
    ws = Workspace(root, tmp_path / "home" / "snapshots" / "s1")
    ws.write("a.py", "print(1)\n")
    digest = ws.store_object(b"written by undo\n")
    victim = (root / ESCAPE).resolve()
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_text(HOST_TEXT)  # an undo of a "new file" would delete it
    absolute = tmp_path / "abs-escape"
    rows = [
        {
            "path": name,
            "before_hash": digest if before == "object" else None,
            "after_hash": digest,
            "before_kept": True,
        }
        for name in (str(absolute), ESCAPE)
    ]
    with (ws.meta / "edits.jsonl").open("a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    for _ in rows:
        with pytest.raises(WorkspaceError, match=r"(?i)journal|refus") as err:
            ws.undo_last_edit()
        assert "\n" not in str(err.value)
    assert victim.read_text() == HOST_TEXT
    assert not absolute.exists()
    assert (root / "a.py").read_text() == "print(1)\n"  # the good history is untouched


def test_landing_a_tampered_bundle_writes_nothing_outside(tmp_path, home, store, tiny_task):
    session = write_session(tmp_path, home, store, tiny_task)
    bundle = export_session(home, store, session.id)
    data = json.loads(bundle.snapshots["snapshots/step-0001.json"])
    files = data["files"] if "files" in data else data.setdefault("changes", {})
    digest = next(iter(files.values()))
    files[ESCAPE] = digest
    files[str(tmp_path / "abs-escape")] = digest
    bundle.snapshots["snapshots/step-0001.json"] = json.dumps(data).encode()
    other = Home.at(tmp_path / "other")
    landing = Store(other.db_path)
    try:
        where = Relocation(task_folder=str(tiny_task))
        with pytest.raises(Exception, match=r"(?i)refus|damaged|not a normalised|absolute"):
            land_session(other, landing, bundle, where)
        for target in outside_targets(other.workspace(session.id), tmp_path):
            assert not target.exists(), target
        assert landing.events(session.id) == []  # nothing of it landed
    finally:
        landing.close()


def test_a_bundle_file_name_that_climbs_is_refused(tmp_path, home, store, tiny_task):
    session = write_session(tmp_path, home, store, tiny_task)
    bundle = export_session(home, store, session.id)
    bundle.snapshots["../../escape"] = b"x"
    other = Home.at(tmp_path / "other")
    landing = Store(other.db_path)
    try:
        with pytest.raises(Exception, match=r"(?i)refus|not a normalised"):
            land_session(other, landing, bundle, Relocation(task_folder=str(tiny_task)))
        assert not (other.snapshots(session.id) / ESCAPE).resolve().exists()
    finally:
        landing.close()


def test_fs_refuses_dotdot_components_itself(tmp_path):
    from mlagent_tui.core.workspace import fs

    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    for call in (
        lambda: fs.write_bytes(root, "sub/../../escape", b"x"),
        lambda: fs.remove(root, "../ws/sub", folders=True),
        lambda: fs.read_bytes(root, "../host/secret.txt"),
    ):
        with pytest.raises(WorkspaceError, match="leaves the workspace"):
            call()
    assert not (tmp_path / "escape").exists() and (root / "sub").is_dir()
