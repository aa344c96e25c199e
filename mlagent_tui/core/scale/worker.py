"""What one Ray task does on its worker: a whole session in a private temporary home.

The task folder and a replay model's responses arrive with the task (no shared file system);
the session runs with the worker's own sandbox backend and an SQLite store of its own, and
returns as a `SessionBundle` for the driver to land. The temporary home is removed either way.
A resumed run arrives with the session so far and returns only what it added.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..home import Home
from ..store import Store
from .bundle import Relocation, SessionBundle, export_session, land_session, unpack_folder


class RemoteRun(BaseModel):
    """A session to run elsewhere: its configuration, as the driver would have made it."""

    task: str
    model: str = Field(description="the driver's model spec (what the store records)")
    replay: bytes | None = Field(default=None, description="a replay model's file, if any")
    config: dict[str, Any] = Field(description="SessionConfig fields but task_dir and model")
    resume: SessionBundle | None = None


class RemoteResult(BaseModel):
    node: str
    host: str
    model: str = Field(default="", description="the model spec the worker ran (its own paths)")
    bundle: SessionBundle | None = None
    reason: str = ""
    error: str | None = None
    wall_s: float = 0.0


def node_id() -> str:
    """The Ray node this runs on; "local" outside Ray (asking Ray then would start a cluster)."""
    try:
        import ray
    except ImportError:
        return "local"
    if not ray.is_initialized():
        return "local"
    return ray.get_runtime_context().get_node_id()


def run_remote(run: RemoteRun, task_files: dict[str, bytes]) -> RemoteResult:
    """Run one session here and bring it back; an exception of the session is data, not a
    crash of the task (a dead worker is what the driver retries)."""
    from ..session import Session, SessionConfig

    root = Path(tempfile.mkdtemp(prefix="mlagent-ray-"))
    result = RemoteResult(node=node_id(), host=socket.gethostname())
    store: Store | None = None
    session = None
    after = 0
    started = time.perf_counter()
    try:
        home = Home.at(root / "home")
        task_dir = root / "task" / run.task
        unpack_folder(task_files, task_dir)
        model = run.model
        if run.replay is not None:
            replay = root / "replay.jsonl"
            replay.write_bytes(run.replay)
            model = f"replay:{replay}"
        result.model = model
        store = Store(home.db_path)
        if run.resume is not None:
            where = Relocation(task_folder=str(task_dir), model=model, replaces_model=run.model)
            land_session(home, store, run.resume, where)
            after = store.next_seq(run.resume.session_id) - 1
            session = Session.resume(home, store, run.resume.session_id)
        else:
            config = SessionConfig(**run.config, task_dir=str(task_dir), model=model)
            session = Session.create(home, store, config)
        outcome = session.run()
        result.reason = outcome.reason
    except Exception as exc:  # noqa: BLE001 - reported to the driver as the run's error
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        result.wall_s = round(time.perf_counter() - started, 4)
        try:
            if store is not None and session is not None:
                result.bundle = export_session(home, store, session.id, after_seq=after)
        finally:
            if store is not None:
                store.close()
            shutil.rmtree(root, ignore_errors=True)
    return result
