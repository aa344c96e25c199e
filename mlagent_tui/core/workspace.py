"""A session's files: the path guard, content-addressed snapshots, diffs and undo.

Objects and manifests live outside the workspace (in the home's snapshots area), so the
agent can neither see nor tamper with its own history.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
from pathlib import Path

from pydantic import BaseModel

MAX_SNAPSHOT_FILE_BYTES = 64 * 1024 * 1024
_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints"}


class WorkspaceError(Exception):
    """A path outside the workspace, a read-only file, or nothing to undo."""


class Edit(BaseModel):
    path: str
    before_hash: str | None
    after_hash: str | None


class Workspace:
    def __init__(self, root: Path, meta: Path, read_only: list[str] | None = None) -> None:
        self.root = Path(root).resolve()
        self.meta = Path(meta)
        self.objects = self.meta / "objects"
        self.read_only = {Path(p).as_posix() for p in (read_only or [])}
        self.objects.mkdir(parents=True, exist_ok=True)
        (self.meta / "snapshots").mkdir(parents=True, exist_ok=True)

    # -- the guard ------------------------------------------------------------------------
    def resolve(self, path: str | Path, *, for_write: bool = False) -> Path:
        """Map a workspace-relative path to disk, refusing anything that leaves the workspace."""
        raw = Path(path)
        if raw.is_absolute() and raw.as_posix().startswith("/workspace"):
            raw = Path(os.path.relpath(raw, "/workspace"))
        candidate = (self.root / raw).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            raise WorkspaceError(f"path {str(path)!r} is outside the workspace")
        rel = self.relative(candidate)
        if for_write and rel in self.read_only:
            raise WorkspaceError(f"{rel} is read-only in this task")
        return candidate

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()

    # -- objects --------------------------------------------------------------------------
    def store_object(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.objects / digest[:2] / digest
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return digest

    def load_object(self, digest: str) -> bytes:
        return (self.objects / digest[:2] / digest).read_bytes()

    def file_hash(self, rel: str) -> str | None:
        path = self.root / rel
        return self.store_object(path.read_bytes()) if path.is_file() else None

    # -- snapshots ------------------------------------------------------------------------
    def files(self) -> list[str]:
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if path.is_file() and not path.is_symlink():
                    found.append(path.relative_to(self.root).as_posix())
        return found

    def snapshot(self, name: str) -> dict[str, str]:
        """Record every file's content under `name`; unchanged files cost nothing new."""
        manifest = {}
        for rel in self.files():
            path = self.root / rel
            if path.stat().st_size <= MAX_SNAPSHOT_FILE_BYTES:
                manifest[rel] = self.store_object(path.read_bytes())
        target = self.meta / "snapshots" / f"{name}.json"
        target.write_text(json.dumps(manifest, sort_keys=True))
        return manifest

    def manifest(self, name: str) -> dict[str, str]:
        target = self.meta / "snapshots" / f"{name}.json"
        if not target.exists():
            raise WorkspaceError(f"no snapshot named {name!r}")
        return json.loads(target.read_text())

    def snapshots(self) -> list[str]:
        return sorted(p.stem for p in (self.meta / "snapshots").glob("*.json"))

    def restore(self, name: str) -> None:
        """Make the workspace hold exactly the files of a snapshot."""
        manifest = self.manifest(name)
        for rel in self.files():
            if rel not in manifest:
                (self.root / rel).unlink()
        for rel, digest in manifest.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                path.write_bytes(self.load_object(digest))

    def diff(self, before: str, after: str) -> str:
        """A unified diff of every text file that differs between two snapshots."""
        a, b = self.manifest(before), self.manifest(after)
        parts = []
        for rel in sorted(set(a) | set(b)):
            if a.get(rel) != b.get(rel):
                parts.append(self.diff_objects(rel, a.get(rel), b.get(rel)))
        return "".join(parts)

    def diff_objects(self, rel: str, before: str | None, after: str | None) -> str:
        old = self._text(before)
        new = self._text(after)
        if old is None or new is None:
            return f"Binary file {rel} changed\n"
        return "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"a/{rel}" if before else "/dev/null",
                tofile=f"b/{rel}" if after else "/dev/null",
            )
        )

    def _text(self, digest: str | None) -> str | None:
        if digest is None:
            return ""
        try:
            return self.load_object(digest).decode("utf-8")
        except UnicodeDecodeError:
            return None

    # -- edits and undo -------------------------------------------------------------------
    def write(self, path: str, content: str | bytes) -> Edit:
        """Write a file through the guard and remember the edit for undo."""
        target = self.resolve(path, for_write=True)
        rel = self.relative(target)
        before = self.file_hash(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)
        edit = Edit(path=rel, before_hash=before, after_hash=self.store_object(data))
        self._push_edit(edit)
        return edit

    def _journal(self) -> Path:
        return self.meta / "edits.jsonl"

    def _push_edit(self, edit: Edit) -> None:
        with self._journal().open("a") as fh:
            fh.write(edit.model_dump_json() + "\n")

    def edits(self) -> list[Edit]:
        journal = self._journal()
        if not journal.exists():
            return []
        return [Edit.model_validate_json(line) for line in journal.read_text().splitlines() if line]

    def undo_last_edit(self, path: str | None = None) -> Edit:
        """Put back the content before the last edit (of `path`, if given); returns the undo."""
        edits = self.edits()
        rel = self.relative(self.resolve(path)) if path else None
        for index in range(len(edits) - 1, -1, -1):
            if rel is None or edits[index].path == rel:
                edit = edits.pop(index)
                break
        else:
            raise WorkspaceError(f"no edit to undo{f' for {rel}' if rel else ''}")
        target = self.root / edit.path
        if edit.before_hash is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(self.load_object(edit.before_hash))
        self._journal().write_text("".join(e.model_dump_json() + "\n" for e in edits))
        return Edit(path=edit.path, before_hash=edit.after_hash, after_hash=edit.before_hash)

    def history(self, path: str) -> list[str]:
        """The distinct contents (hashes) a file has had across snapshots, oldest first."""
        rel = self.relative(self.resolve(path))
        seen: list[str] = []
        for name in self.snapshots():
            digest = self.manifest(name).get(rel)
            if digest and (not seen or seen[-1] != digest):
                seen.append(digest)
        return seen

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
