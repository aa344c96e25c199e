"""A session's files: the path guard, content-addressed snapshots, diffs and undo."""

from .fs import MissingError, TooManyFiles, WorkspaceError
from .journal import Edit, parse_journal
from .manifest import Manifest, Manifests
from .relpath import Digest, RelPath, check_digest, check_rel
from .workspace import Workspace

__all__ = [
    "Digest",
    "Edit",
    "Manifest",
    "Manifests",
    "MissingError",
    "RelPath",
    "TooManyFiles",
    "Workspace",
    "WorkspaceError",
    "check_digest",
    "check_rel",
    "parse_journal",
]
