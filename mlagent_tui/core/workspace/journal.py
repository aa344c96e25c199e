"""The undo journal: one JSON line per edit the agent made through the host.

Undo writes (or removes) the path a row names, so a row is data the host acts on: it is read
through `Edit`, whose path is a `RelPath` and whose hashes are `Digest`s. A damaged row is
refused with one line and the journal is left as it was.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ValidationError

from ..atomic import write_atomic
from .fs import WorkspaceError
from .relpath import Digest, RelPath, first_error


class Edit(BaseModel):
    path: RelPath
    before_hash: Digest | None
    after_hash: Digest | None
    before_kept: bool = True  # False: the content before was too large to keep for undo


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def push(self, edit: Edit) -> None:
        with self.path.open("a") as fh:
            fh.write(edit.model_dump_json() + "\n")

    def edits(self) -> list[Edit]:
        return parse_journal(self.path.read_bytes()) if self.path.exists() else []

    def replace(self, edits: list[Edit]) -> None:
        write_atomic(self.path, "".join(e.model_dump_json() + "\n" for e in edits))


def parse_journal(raw: bytes) -> list[Edit]:
    """Every row of a stored journal, checked; WorkspaceError naming the first damaged one."""
    edits = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            edits.append(Edit.model_validate_json(line))
        except ValidationError as exc:
            raise WorkspaceError(
                f"the undo journal is damaged at line {number}, refusing it: {first_error(exc)}"
            ) from None
    return edits
