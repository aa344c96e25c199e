"""A session as it travels between machines: its events, snapshot objects and private area.

No shared file system is assumed. A run on a worker comes back as a `SessionBundle`; the driver
`land_session`s it: files first (content-addressed, so a repeat costs nothing), then every new
event in one transaction, so the store holds the whole session or none of it and never an event
twice. The paths a session recorded (its workspace, its task folder, a replay file) are the
worker's; a `Relocation` rewrites them to the machine the session lands on, so resume and fork
work there as for a local run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..atomic import write_atomic
from ..events import Event, SessionStarted
from ..home import Home
from ..session.lock import LOCK_NAME
from ..store import Store
from ..workspace import (
    Manifests,
    RelPath,
    Workspace,
    WorkspaceError,
    check_digest,
    check_rel,
    parse_journal,
)

_SKIP_DIRS = frozenset({"__pycache__", ".ipynb_checkpoints"})
# a task folder travels whole with each bench; past this it is no longer a task but a data set
MAX_FOLDER_BYTES = 256 * 1024 * 1024


class BundleError(ValueError):
    """A bundle or folder that cannot travel or land (too large, a bad path)."""


class SessionBundle(BaseModel):
    """One session's share of the spine, and the files its replay, resume and fork read."""

    session_id: str
    events: list[str] = Field(description="Event JSON, in seq order")
    snapshots: dict[RelPath, bytes] = Field(default_factory=dict, description="HOME/snapshots/ID")
    private: dict[RelPath, bytes] = Field(default_factory=dict, description="HOME/private/ID")

    def parsed(self) -> list[Event]:
        return [Event.model_validate_json(e) for e in self.events]


class Relocation(BaseModel):
    """Where a landing session's recorded paths point on this machine."""

    task_folder: str
    model: str | None = Field(default=None, description="the model spec to record instead")
    replaces_model: str | None = Field(default=None, description="...where it recorded this one")


# -- folders ---------------------------------------------------------------------------------
def _safe_rel(rel: str) -> str:
    try:
        return check_rel(rel)
    except ValueError as exc:
        raise BundleError(f"refusing the path {rel[:200]!r} in a bundle: {exc}") from None


def pack_folder(folder: Path, skip: frozenset[str] = frozenset()) -> dict[str, bytes]:
    """Every regular file under `folder` by relative path (links are not followed)."""
    folder = Path(folder)
    files: dict[str, bytes] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name in skip or name.endswith(".tmp") or path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            total += len(data)
            if total > MAX_FOLDER_BYTES:
                raise BundleError(
                    f"{folder} is over {MAX_FOLDER_BYTES >> 20} MB: too large to send"
                )
            files[path.relative_to(folder).as_posix()] = data
    return files


def unpack_folder(files: dict[str, bytes], folder: Path, *, keep: str | None = None) -> None:
    """Write packed files under `folder`; those under the folder `keep` that are already there
    stay as they are (content-addressed objects: same name, same content)."""
    folder = Path(folder)
    for rel, data in files.items():
        target = folder / _safe_rel(rel)
        if keep is not None and rel.startswith(keep + "/") and target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)


# -- sessions --------------------------------------------------------------------------------
def export_session(home: Home, store: Store, session_id: str, after_seq: int = 0) -> SessionBundle:
    """A stored session's events after `after_seq` and all its files, ready to travel."""
    events = [e.model_dump_json() for e in store.events(session_id) if e.seq > after_seq]
    snapshots = home.snapshots(session_id)
    private = home.private(session_id)
    return SessionBundle(
        session_id=session_id,
        events=events,
        snapshots=pack_folder(snapshots, skip=frozenset({LOCK_NAME})) if snapshots.is_dir() else {},
        private=pack_folder(private) if private.is_dir() else {},
    )


def relocate(event: Event, home: Home, where: Relocation) -> Event:
    """A SessionStarted rewritten to this machine's paths; any other event as it is."""
    p = event.payload
    if not isinstance(p, SessionStarted):
        return event
    config: dict[str, Any] = dict(p.config)
    config["task_folder"] = config["task_dir"] = where.task_folder
    model = p.model
    if where.model is not None and where.replaces_model is not None:
        if config.get("model") == where.replaces_model:
            config["model"] = where.model
        if model == where.replaces_model:
            model = where.model
    payload = p.model_copy(
        update={
            "workspace": str(home.workspace(event.session_id)),
            "config": config,
            "model": model,
        }
    )
    return event.model_copy(update={"payload": payload})


def check_stored(bundle: SessionBundle, landed: Path) -> None:
    """Refuse a bundle whose stored data names a path outside the workspace, before any of it
    is written: every file name, every manifest (with the listings it reads, from the bundle or
    from what landed before) and every row of the undo journal go through RelPath / Digest."""
    files = bundle.snapshots
    for rel in [*files, *bundle.private]:
        _safe_rel(rel)

    def load_object(digest: str) -> bytes:
        check_digest(digest)
        data = files.get(f"objects/{digest[:2]}/{digest}")
        return data if data is not None else (landed / "objects" / digest[:2] / digest).read_bytes()

    def no_store(data: bytes) -> str:
        raise BundleError("a bundle is only read here")

    manifests = Manifests(landed / "snapshots", load_object, no_store)
    try:
        for rel, data in files.items():
            if rel.startswith("snapshots/") and rel.endswith(".json") and rel.count("/") == 1:
                manifests.parse(rel[len("snapshots/") : -len(".json")], data)
            elif rel == "edits.jsonl":
                parse_journal(data)
    except (WorkspaceError, ValueError) as exc:
        raise BundleError(f"refusing the bundle of {bundle.session_id}: {exc}") from None


def land_session(home: Home, store: Store, bundle: SessionBundle, where: Relocation) -> int:
    """Make a bundle's session this home's own: files, a workspace holding its last snapshot,
    then its new events in one transaction. Returns how many events were appended (0: it had
    landed already)."""
    sid = bundle.session_id
    if not sid or "/" in sid or sid in (".", ".."):
        raise BundleError(f"refusing the session id {sid!r}")
    events = bundle.parsed()
    if any(e.session_id != sid for e in events):
        raise BundleError(f"a bundle of {sid} carries another session's events")
    check_stored(bundle, home.snapshots(sid))
    unpack_folder(bundle.snapshots, home.snapshots(sid), keep="objects")
    unpack_folder(bundle.private, home.private(sid))
    ws = Workspace(home.workspace(sid), home.snapshots(sid))
    steps = [n for n in ws.snapshots() if n.startswith("step-")]
    if steps:
        ws.root.mkdir(parents=True, exist_ok=True)
        ws.restore(steps[-1])
    first_new = store.next_seq(sid)
    fresh = [relocate(e, home, where) for e in events if e.seq >= first_new]
    store.append_many(fresh)
    return len(fresh)
