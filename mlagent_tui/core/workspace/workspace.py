"""A session's files: the path guard, content-addressed snapshots, diffs and undo.

Objects and manifests live outside the workspace (in the home's snapshots area), so the
agent can neither see nor tamper with its own history. Every host read and write of the
workspace goes through `fs.py`, which never follows a link the agent could have made.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import json
import os
import shutil
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from . import fs
from .fs import MissingError, WorkspaceError

# Read at call time (tests lower them). A file past the first, or past the snapshot's total,
# or new content once the session's object store is full, is skipped and the skip recorded.
MAX_SNAPSHOT_FILE_BYTES = 64 * 1024 * 1024
MAX_SNAPSHOT_TOTAL_BYTES = 512 * 1024 * 1024
MAX_OBJECT_STORE_BYTES = 2 * 1024 * 1024 * 1024
MAX_SKIPPED_NAMES = 1_000
_SKIP_DIRS = frozenset({"__pycache__", ".ipynb_checkpoints"})
_MB = 1024 * 1024

__all__ = ["Edit", "MissingError", "Workspace", "WorkspaceError"]


class Edit(BaseModel):
    path: str
    before_hash: str | None
    after_hash: str | None
    before_kept: bool = True  # False: the content before was too large to keep for undo


class Manifest(BaseModel):
    """A snapshot: each file's content hash, and what could not be kept (and why)."""

    files: dict[str, str]
    skipped: dict[str, str] = {}
    skipped_more: int = 0


class Workspace:
    def __init__(self, root: Path, meta: Path, read_only: list[str] | None = None) -> None:
        self.root = Path(root).resolve()
        self.meta = Path(meta)
        self.objects = self.meta / "objects"
        self.read_only = {Path(p).as_posix() for p in (read_only or [])}
        self.objects.mkdir(parents=True, exist_ok=True)
        (self.meta / "snapshots").mkdir(parents=True, exist_ok=True)
        self._store_bytes: int | None = None

    # -- the guard ------------------------------------------------------------------------
    def normalize(self, path: str | Path) -> str:
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
        return "/".join(parts)

    def resolve(self, path: str | Path, *, for_write: bool = False) -> Path:
        """Map a workspace-relative path to disk, refusing one that leaves the workspace or
        passes through a link (the refusal is early and friendly; the real guard is that
        every access walks without following links)."""
        rel = self.normalize(path)
        if for_write:
            self._check_writable(rel, path)
        self._lstat(rel)  # refuses a link on the way
        return self.root / rel if rel else self.root

    def _lstat(self, rel: str) -> os.stat_result | None:
        try:
            return fs.lstat(self.root, rel)
        except OSError as exc:
            raise WorkspaceError(f"{rel} cannot be used: {exc.strerror}") from None

    def _check_writable(self, rel: str, given: str | Path = "") -> None:
        if not rel and not str(given).strip():
            raise WorkspaceError("the file name is empty")
        if not rel:
            raise WorkspaceError(f"{str(given)!r} is a directory (the workspace itself)")
        if rel in self.read_only:
            raise WorkspaceError(f"{rel} is read-only in this task")

    def relative(self, path: Path) -> str:
        return Path(path).relative_to(self.root).as_posix()

    def kind(self, path: str | Path) -> str | None:
        """'file', 'dir', 'link', 'other' or None (absent), never following a link."""
        return fs.kind_of(self._lstat(self.normalize(path)))  # a linked folder on the way raises

    def read_bytes(self, path: str | Path, limit: int | None = None) -> bytes:
        """A regular file's content; a link, a folder or a special file is refused."""
        rel = self.normalize(path)
        try:
            return fs.read_bytes(self.root, rel, limit)
        except OSError as exc:
            raise WorkspaceError(f"{rel} cannot be read: {exc.strerror}") from None

    def listing(self, path: str | Path) -> list[tuple[str, str | None, int]]:
        rel = self.normalize(path)
        try:
            return fs.listing(self.root, rel)
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                raise WorkspaceError(f"{rel} is not a directory") from None
            raise WorkspaceError(f"{rel or '.'} cannot be listed: {exc.strerror}") from None

    # -- objects --------------------------------------------------------------------------
    def store_object(self, data: bytes, digest: str | None = None) -> str:
        digest = digest or hashlib.sha256(data).hexdigest()
        target = self.objects / digest[:2] / digest
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
            if self._store_bytes is not None:
                self._store_bytes += len(data)
        return digest

    def _has(self, digest: str) -> bool:
        return (self.objects / digest[:2] / digest).exists()

    def load_object(self, digest: str) -> bytes:
        return (self.objects / digest[:2] / digest).read_bytes()

    def store_bytes(self) -> int:
        """Bytes the session's object store holds (measured once, then counted)."""
        if self._store_bytes is None:
            self._store_bytes = sum(p.stat().st_size for p in self.objects.rglob("*"))
        return self._store_bytes

    def file_hash(self, rel: str) -> str | None:
        """The stored hash of a regular file's content; None where there is none (or a link)."""
        try:
            return self.store_object(fs.read_bytes(self.root, rel))
        except (WorkspaceError, OSError):
            return None

    # -- snapshots ------------------------------------------------------------------------
    def files(self) -> list[str]:
        return [e.rel for e in fs.walk(self.root, _SKIP_DIRS) if e.is_file]

    def snapshot(self, name: str) -> dict[str, str]:
        """Record every file's content under `name`; unchanged files cost nothing new.

        Files too large to keep (alone, or past the snapshot's total, or once the object
        store is full) are skipped, and the manifest says which and why.
        """
        files: dict[str, str] = {}
        skipped: dict[str, str] = {}
        more = total = 0
        per_file, per_snapshot = MAX_SNAPSHOT_FILE_BYTES, MAX_SNAPSHOT_TOTAL_BYTES
        for entry in fs.walk(self.root, _SKIP_DIRS):
            if not entry.is_file:
                continue
            size = entry.st.st_size
            reason = None
            if size > per_file:
                reason = f"{size / _MB:.1f} MB, over the {per_file / _MB:.0f} MB limit per file"
            elif total + size > per_snapshot:
                reason = f"over the {per_snapshot / _MB:.0f} MB limit per snapshot"
            if reason is None:
                try:
                    data = fs.read_bytes(self.root, entry.rel, per_file + 1)
                except (WorkspaceError, OSError):
                    continue  # no longer a regular file: nothing to keep
                digest = hashlib.sha256(data).hexdigest()
                if len(data) > per_file:
                    reason = f"over the {per_file / _MB:.0f} MB limit per file"
                elif (
                    not self._has(digest)
                    and self.store_bytes() + len(data) > MAX_OBJECT_STORE_BYTES
                ):
                    reason = "the session's snapshot store is full"
                else:
                    total += len(data)
                    files[entry.rel] = self.store_object(data, digest)
                    continue
            if len(skipped) < MAX_SKIPPED_NAMES:
                skipped[entry.rel] = reason
            else:
                more += 1
        manifest = Manifest(files=files, skipped=skipped, skipped_more=more)
        target = self.meta / "snapshots" / f"{name}.json"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": 2, **manifest.model_dump()}, sort_keys=True))
        tmp.replace(target)
        return files

    def load_manifest(self, name: str) -> Manifest:
        target = self.meta / "snapshots" / f"{name}.json"
        if not target.exists():
            raise WorkspaceError(f"no snapshot named {name!r}")
        data = json.loads(target.read_text())
        if isinstance(data.get("version"), int):
            return Manifest.model_validate(data)
        return Manifest(files=data)  # the first format: {path: hash}

    def manifest(self, name: str) -> dict[str, str]:
        return self.load_manifest(name).files

    def skipped(self, name: str) -> dict[str, str]:
        return self.load_manifest(name).skipped

    def snapshots(self) -> list[str]:
        return sorted(p.stem for p in (self.meta / "snapshots").glob("*.json"))

    def restore(self, name: str, source: Workspace | None = None) -> None:
        """Make the workspace hold exactly the files of a snapshot (of `source`, by default
        this workspace). Links and strays are removed, never followed; files the snapshot
        could not keep are left as they are."""
        source = source or self
        manifest = source.load_manifest(name)
        keep = set(manifest.files) | set(manifest.skipped)
        for entry in fs.walk(self.root, _SKIP_DIRS):
            wanted = entry.rel in keep or (manifest.skipped_more and entry.is_file)
            if not entry.is_file or not wanted:
                try:
                    fs.remove(self.root, entry.rel)
                except (WorkspaceError, OSError):
                    pass  # its folder became a link meanwhile: the writes below replace it
        for rel, digest in manifest.files.items():
            try:
                current = fs.read_bytes(self.root, rel)
            except (WorkspaceError, OSError):
                current = None
            if current is None or hashlib.sha256(current).hexdigest() != digest:
                fs.write_bytes(self.root, rel, source.load_object(digest), replace=True)

    def put(self, rel: str, data: bytes) -> None:
        """Write a file for the system (not an agent's edit: no undo), never through a link."""
        fs.write_bytes(self.root, self.normalize(rel), data)

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
        """Write a file through the guard (atomically, never through a link); remember the
        edit for undo."""
        rel = self.normalize(path)
        self._check_writable(rel, path)
        if isinstance(content, str):
            try:
                data = content.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise WorkspaceError(
                    f"the content is not valid text: a lone surrogate {exc.object[exc.start]!r} "
                    f"at character {exc.start}; nothing was written"
                ) from None
        else:
            data = content
        kind = fs.kind_of(self._lstat(rel))
        if kind == "dir":
            raise WorkspaceError(f"{rel} is a directory")
        st = self._lstat(rel) if kind == "file" else None
        kept = st is None or st.st_size <= MAX_SNAPSHOT_FILE_BYTES
        before = self.file_hash(rel) if st is not None and kept else None
        try:
            fs.write_bytes(self.root, rel, data)
        except OSError as exc:
            raise WorkspaceError(f"{rel} cannot be written: {exc.strerror}") from None
        after = self.store_object(data)
        edit = Edit(path=rel, before_hash=before, after_hash=after, before_kept=kept)
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
        rel = self.normalize(path) if path else None
        for index in range(len(edits) - 1, -1, -1):
            if rel is None or edits[index].path == rel:
                edit = edits.pop(index)
                break
        else:
            raise WorkspaceError(f"no edit to undo{f' for {rel}' if rel else ''}")
        if not edit.before_kept:
            raise WorkspaceError(f"{edit.path} was too large to keep before the edit; no undo")
        try:
            if edit.before_hash is None:
                fs.remove(self.root, edit.path)
            else:
                fs.write_bytes(self.root, edit.path, self.load_object(edit.before_hash))
        except OSError as exc:
            raise WorkspaceError(f"cannot undo {edit.path}: {exc.strerror}") from None
        self._journal().write_text("".join(e.model_dump_json() + "\n" for e in edits))
        return Edit(path=edit.path, before_hash=edit.after_hash, after_hash=edit.before_hash)

    def history(self, path: str) -> list[str]:
        """The distinct contents (hashes) a file has had across snapshots, oldest first."""
        rel = self.normalize(path)
        seen: list[str] = []
        for name in self.snapshots():
            digest = self.manifest(name).get(rel)
            if digest and (not seen or seen[-1] != digest):
                seen.append(digest)
        return seen

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)  # rmtree never follows links
        self.root.mkdir(parents=True)
