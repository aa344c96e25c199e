"""Snapshot manifests: what each file held at a step, stored as a delta against a shared base.

A manifest names every file of the workspace, so written whole each step it costs the host
the tree's size per step (tens of MB for a tree of 100k files). Instead the full listing is a
content-addressed object (zlib JSON) in the session's object store, shared by many steps, and
each step's manifest holds only what differs from that base. While a step changes little the
manifest stays a few hundred bytes; past a share of the tree a new base is written (and an
unchanged listing is the same object: it costs nothing twice). A base is one level deep, so
reading a manifest is one listing plus one delta whatever the number of steps.

Manifests are data read back later and may come from another machine, so every path and hash
in them goes through `RelPath` / `Digest`; a damaged one is refused with one line.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ..atomic import write_atomic
from .fs import WorkspaceError
from .relpath import Digest, RelPath, first_error

VERSION = 3
# a new base once the delta has more entries than this share of the tree (and at least MIN)
REBASE_SHARE = 8
REBASE_MIN = 256
# a listing object is refused past this size once inflated (a bomb cannot fill the host's memory)
MAX_LISTING_BYTES = 256 * 1024 * 1024


class Manifest(BaseModel):
    """A snapshot: each file's content hash, and what could not be kept (and why)."""

    files: dict[RelPath, Digest]
    skipped: dict[RelPath, str] = {}
    skipped_more: int = Field(default=0, ge=0)
    over_limit: str | None = None  # the workspace was past a limit: `files` is only its start


class _Delta(BaseModel):
    """The stored form (version 3): a base listing's hash, and what differs from it."""

    version: int
    base: Digest | None = None
    changes: dict[RelPath, Digest] = {}
    removed: list[RelPath] = []
    skipped: dict[RelPath, str] = {}
    skipped_more: int = Field(default=0, ge=0)
    over_limit: str | None = None


class _Listing(BaseModel):
    files: dict[RelPath, Digest]


def damaged(name: str, exc: Exception) -> WorkspaceError:
    return WorkspaceError(f"snapshot {name} is damaged, refusing it: {first_error(exc)}")


class Manifests:
    """The manifests of one session's snapshots area, and the listing objects they share."""

    def __init__(
        self,
        folder: Path,
        load_object: Callable[[str], bytes],
        store_object: Callable[[bytes], str],
    ) -> None:
        self.folder = folder
        self._load_object = load_object
        self._store_object = store_object
        self._listings: dict[str, dict[str, str]] = {}  # the last few bases read or written

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json"))

    # -- reading ------------------------------------------------------------------------
    def load(self, name: str) -> Manifest:
        target = self.path(name)
        if not target.exists():
            raise WorkspaceError(f"no snapshot named {name!r}")
        return self.parse(name, target.read_bytes())

    def parse(self, name: str, raw: bytes) -> Manifest:
        """A stored manifest (any version) as a checked Manifest; WorkspaceError if damaged."""
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            version = data.get("version")
            if not isinstance(version, int):  # the first format: {path: hash}
                return Manifest.model_validate({"files": data})
            if version < VERSION:  # the second: the whole listing, with skips
                return Manifest.model_validate(data)
            delta = _Delta.model_validate(data)
        except (ValueError, ValidationError) as exc:
            raise damaged(name, exc) from None
        files = dict(self.listing(delta.base, name)) if delta.base else {}
        for rel in delta.removed:
            files.pop(rel, None)
        files.update(delta.changes)
        return Manifest.model_construct(
            files=files,
            skipped=delta.skipped,
            skipped_more=delta.skipped_more,
            over_limit=delta.over_limit,
        )

    def listing(self, digest: str, name: str = "") -> dict[str, str]:
        cached = self._listings.get(digest)
        if cached is not None:
            return cached
        try:
            raw = self._load_object(digest)
            inflate = zlib.decompressobj()
            text = inflate.decompress(raw, MAX_LISTING_BYTES)
            if inflate.unconsumed_tail:
                raise ValueError(f"its listing is over {MAX_LISTING_BYTES >> 20} MB")
            files = _Listing.model_validate({"files": json.loads(text)}).files
        except FileNotFoundError:
            raise WorkspaceError(f"snapshot {name or digest} lacks its listing object") from None
        except (ValueError, zlib.error, ValidationError) as exc:
            raise damaged(name or digest, exc) from None
        self._remember(digest, files)
        return files

    def _remember(self, digest: str, files: dict[str, str]) -> None:
        if len(self._listings) >= 2:
            self._listings.pop(next(iter(self._listings)))
        self._listings[digest] = files

    # -- writing ------------------------------------------------------------------------
    def save(self, name: str, manifest: Manifest) -> None:
        """Write `manifest` as a delta against the base of the newest manifest there is."""
        base = self._newest_base()
        files = manifest.files
        old = self.listing(base) if base else None
        if old is not None:
            changes = {rel: d for rel, d in files.items() if old.get(rel) != d}
            removed = [rel for rel in old if rel not in files]
            if len(changes) + len(removed) > max(REBASE_MIN, len(files) // REBASE_SHARE):
                old = None
        if old is None:
            text = json.dumps(files, sort_keys=True, separators=(",", ":")).encode()
            base = self._store_object(zlib.compress(text, 6))
            self._remember(base, dict(files))
            changes, removed = {}, []
        delta = _Delta.model_construct(
            version=VERSION,
            base=base,
            changes=changes,
            removed=sorted(removed),
            skipped=manifest.skipped,
            skipped_more=manifest.skipped_more,
            over_limit=manifest.over_limit,
        )
        write_atomic(self.path(name), json.dumps(delta.model_dump(), sort_keys=True))

    def _newest_base(self) -> str | None:
        """The base listing of the newest manifest there is (None: none, or an older format)."""
        for name in reversed(self.names()):
            try:
                data = json.loads(self.path(name).read_bytes())
                base = _Delta.model_validate(data).base if data.get("version") == VERSION else None
                if base is not None:
                    self.listing(base, name)  # it must still read
                return base
            except (ValueError, ValidationError, WorkspaceError, AttributeError):
                return None
        return None
