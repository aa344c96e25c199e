"""The guard on a name the model gives: a clean workspace-relative path, or one clear error."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from . import fs
from .fs import WorkspaceError
from .relpath import check_rel


def normalize(path: str | Path) -> str:
    """A name the model gave, as a clean workspace-relative path ("" is the workspace).

    Purely lexical: the disk is only ever touched through `fs`, which refuses
    links on the way, so a link can neither lead out nor be raced in.
    """
    text = str(path)
    if "\x00" in text:
        raise WorkspaceError(f"the file name {text!r} contains a NUL byte")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise WorkspaceError(f"the file name {text!r} is not valid UTF-8 text") from None
    if size > fs.PATH_MAX:
        raise WorkspaceError(f"the file name is too long ({size} bytes; at most 4096)")
    raw = PurePosixPath(text)
    if raw.is_absolute():
        if raw.parts[:2] != ("/", "workspace"):
            raise WorkspaceError(f"path {text!r} is outside the workspace")
        raw = PurePosixPath(*raw.parts[2:])
    parts: list[str] = []
    for part in raw.parts:
        if part == "..":
            if not parts:
                raise WorkspaceError(f"path {text!r} is outside the workspace")
            parts.pop()
        elif part != ".":
            if len(part.encode()) > fs.NAME_MAX:
                raise WorkspaceError(
                    f"the file name is too long ({len(part.encode())} bytes in one "
                    f"component; at most {fs.NAME_MAX})"
                )
            parts.append(part)
    rel = "/".join(parts)
    try:
        return check_rel(rel) if rel else rel
    except ValueError as exc:
        raise WorkspaceError(f"the file name {text[:200]!r} cannot be used: {exc}") from None
