"""A session's files: the path guard, content-addressed snapshots, diffs and undo.

Objects and manifests live outside the workspace (in the home's snapshots area), so the
agent can neither see nor tamper with its own history. Every host read and write of the
workspace goes through `fs.py`, which never follows a link the agent could have made.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path

from ..atomic import write_atomic
from . import fs
from .diff import bounded_diff
from .fs import MissingError, TooManyFiles, WalkCap, WorkspaceError
from .guard import normalize
from .hashcache import HashCache
from .journal import Edit, Journal
from .manifest import Manifest, Manifests
from .relpath import check_digest, check_rel

# Read at call time (tests lower them). A file past the first, or past the snapshot's total,
# or new content once the session's object store is full, is skipped and the skip recorded.
MAX_SNAPSHOT_FILE_BYTES = 64 * 1024 * 1024
MAX_SNAPSHOT_TOTAL_BYTES = 512 * 1024 * 1024
MAX_OBJECT_STORE_BYTES = 2 * 1024 * 1024 * 1024
MAX_SKIPPED_NAMES = 1_000
# What one snapshot may cost the host: past either the step reports an error and the snapshot
# keeps only the start of the tree (see Manifest.over_limit). Folders count as names.
MAX_WORKSPACE_FILES = 200_000
MAX_WORKSPACE_PATH_BYTES = 32 * 1024 * 1024
_SKIP_DIRS = frozenset({"__pycache__", ".ipynb_checkpoints"})
_MB = 1024 * 1024

__all__ = ["Edit", "MissingError", "Workspace", "WorkspaceError"]


class Workspace:
    def __init__(
        self,
        root: Path,
        meta: Path,
        read_only: list[str] | None = None,
        *,
        max_files: int | None = None,
        max_path_bytes: int | None = None,
    ) -> None:
        """`max_files` / `max_path_bytes`: this workspace's caps on names (default: the
        module's MAX_WORKSPACE_FILES / MAX_WORKSPACE_PATH_BYTES at each snapshot)."""
        self.max_files, self.max_path_bytes = max_files, max_path_bytes
        self.root = Path(root).resolve()
        self.meta = Path(meta)
        self.objects = self.meta / "objects"
        self.read_only = {Path(p).as_posix() for p in (read_only or [])}
        self.objects.mkdir(parents=True, exist_ok=True)
        (self.meta / "snapshots").mkdir(parents=True, exist_ok=True)
        self._store_bytes: int | None = None
        self._hashes = HashCache()
        self.manifests = Manifests(self.meta / "snapshots", self.load_object, self.store_object)
        self.journal = Journal(self.meta / "edits.jsonl")

    def cap(self) -> WalkCap:
        """The limits of one walk of this workspace (the module's read at call time)."""
        return WalkCap(
            self.max_files or MAX_WORKSPACE_FILES, self.max_path_bytes or MAX_WORKSPACE_PATH_BYTES
        )

    # -- the guard ------------------------------------------------------------------------
    def normalize(self, path: str | Path) -> str:
        """A name the model gave, as a clean workspace-relative path ("" is the workspace)."""
        return normalize(path)

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
            write_atomic(target, data)
            if self._store_bytes is not None:
                self._store_bytes += len(data)
        return digest

    def _has(self, digest: str) -> bool:
        return (self.objects / digest[:2] / digest).exists()

    def load_object(self, digest: str) -> bytes:
        """An object's bytes; a name that is not a content hash is refused (it is read from
        stored data, and `objects/../..` would be any file of the host)."""
        try:
            check_digest(digest)
        except ValueError as exc:
            raise WorkspaceError(f"refusing the object {digest[:80]!r}: {exc}") from None
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
        store is full) are skipped, and the manifest says which and why. A tree past
        MAX_WORKSPACE_FILES names or MAX_WORKSPACE_PATH_BYTES is walked only that far and the
        manifest says so (`over_limit`): the host's cost per step stays bounded.
        """
        files: dict[str, str] = {}
        skipped: dict[str, str] = {}
        more = total = 0
        over = None
        per_file, per_snapshot = MAX_SNAPSHOT_FILE_BYTES, MAX_SNAPSHOT_TOTAL_BYTES
        self._hashes.begin()
        try:
            entries = fs.walk(self.root, _SKIP_DIRS, self.cap())
        except TooManyFiles as exc:
            entries, over, more = exc.found, str(exc), 1
        for entry in entries:
            if not entry.is_file:
                continue
            try:
                check_rel(entry.rel)
            except ValueError:
                more += 1  # a name the host does not store (a backslash, a control character)
                continue
            size = entry.st.st_size
            reason = None
            known = self._hashes.lookup(entry)
            if known is not None and size <= per_file and total + size <= per_snapshot:
                total += size
                files[entry.rel] = known
                continue
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
                    self._hashes.record(entry, digest)
                    continue
            if len(skipped) < MAX_SKIPPED_NAMES:
                skipped[entry.rel] = reason
            else:
                more += 1
        manifest = Manifest.model_construct(
            files=files, skipped=skipped, skipped_more=more, over_limit=over
        )
        self.manifests.save(name, manifest)
        self._hashes.commit()
        return files

    def load_manifest(self, name: str) -> Manifest:
        return self.manifests.load(name)

    def manifest(self, name: str) -> dict[str, str]:
        return self.load_manifest(name).files

    def skipped(self, name: str) -> dict[str, str]:
        return self.load_manifest(name).skipped

    def snapshots(self) -> list[str]:
        return self.manifests.names()

    def restore(self, name: str, source: Workspace | None = None) -> None:
        """Make the workspace hold exactly the files of a snapshot (of `source`, by default
        this workspace). Links and strays are removed, never followed; files the snapshot
        could not keep are left as they are."""
        source = source or self
        manifest = source.load_manifest(name)  # checked before anything is touched
        keep = set(manifest.files) | set(manifest.skipped)
        partial = bool(manifest.skipped_more or manifest.over_limit)
        try:
            entries = fs.walk(self.root, _SKIP_DIRS, self.cap())
        except TooManyFiles as exc:
            if not partial:  # none of the surplus is wanted: cheaper to start afresh
                self.clear()
            entries = exc.found if partial else []
        for entry in entries:
            wanted = entry.rel in keep or (partial and entry.is_file)
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
        """A bounded diff of two stored objects (see diff.py): large changes are summarised."""
        return bounded_diff(rel, self._object_path(before), self._object_path(after))

    def _object_path(self, digest: str | None) -> Path | None:
        if digest is None:
            return None
        try:
            check_digest(digest)
        except ValueError as exc:
            raise WorkspaceError(f"refusing the object {digest[:80]!r}: {exc}") from None
        return self.objects / digest[:2] / digest

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
        self.journal.push(edit)
        return edit

    def edits(self) -> list[Edit]:
        """The undo journal, every row checked (a damaged one is refused with one line)."""
        return self.journal.edits()

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
        self.journal.replace(edits)
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
