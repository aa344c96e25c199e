"""Where a user's database, workspaces and private answer areas live."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict


def default_home() -> Path:
    return Path(os.environ.get("MLAGENT_HOME") or "sessions")


class Home(BaseModel):
    """The layout under the home folder; private answers sit beside, never inside, workspaces."""

    model_config = ConfigDict(frozen=True)
    root: Path

    @classmethod
    def at(cls, root: Path | str | None = None) -> Home:
        path = Path(root) if root is not None else default_home()
        path.mkdir(parents=True, exist_ok=True)
        return cls(root=path.resolve())

    @property
    def db_path(self) -> Path:
        return self.root / "mlagent.db"

    def workspace(self, session_id: str) -> Path:
        return self.root / "workspaces" / session_id

    def private(self, session_id: str) -> Path:
        return self.root / "private" / session_id

    def snapshots(self, session_id: str) -> Path:
        return self.root / "snapshots" / session_id


def new_session_id() -> str:
    """Sortable by time, unique enough for one user's machine."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
