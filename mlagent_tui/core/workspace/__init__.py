"""A session's files: the path guard, content-addressed snapshots, diffs and undo."""

from .fs import MissingError, WorkspaceError
from .workspace import Edit, Workspace

__all__ = ["Edit", "MissingError", "Workspace", "WorkspaceError"]
