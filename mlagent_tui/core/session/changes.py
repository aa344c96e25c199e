"""What a step changed in the workspace, as events and as a note for the model.

A step may create any number of files, so what it costs the store is bounded here: at most
MAX_FILE_EVENTS_PER_STEP FileChanged events (the submission file first), then one
FileChangesSummarized that counts the rest. A workspace past the host's limits on names
(Manifest.over_limit) makes the step an error that says what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import FileChanged, FileChangesSummarized
from ..workspace import Workspace

if TYPE_CHECKING:
    from .parts import SessionParts

MAX_FILE_EVENTS_PER_STEP = 200  # read at call time (tests lower it)
MAX_DIFF_CHARS = 200_000
_EXAMPLES = 20


def record_file_changes(s: SessionParts, before: str, after: str) -> None:
    """One FileChanged event per file that differs between two snapshots, up to the bound (a
    file the snapshot could not keep is not reported as deleted: its content is unknown)."""
    first, second = s.workspace.load_manifest(before), s.workspace.load_manifest(after)
    old, new = first.files, second.files
    unknown = set(first.skipped) | set(second.skipped)
    changed = [
        rel
        for rel in sorted(set(old) | set(new))
        if rel not in unknown and old.get(rel) != new.get(rel)
    ]
    submission = s.task.spec.submission.file
    if submission in changed:  # what graders and trainers look for is never summarised away
        changed.remove(submission)
        changed.insert(0, submission)
    shown, rest = changed[:MAX_FILE_EVENTS_PER_STEP], changed[MAX_FILE_EVENTS_PER_STEP:]
    for rel in shown:
        diff = s.workspace.diff_objects(rel, old.get(rel), new.get(rel))
        s.recorder.emit(
            FileChanged(
                path=rel,
                before_hash=old.get(rel),
                after_hash=new.get(rel),
                diff=diff[:MAX_DIFF_CHARS],
            )
        )
    if rest:
        s.recorder.emit(
            FileChangesSummarized(
                added=sum(1 for rel in rest if rel not in old),
                removed=sum(1 for rel in rest if rel not in new),
                changed=sum(1 for rel in rest if rel in old and rel in new),
                examples=rest[:_EXAMPLES],
            )
        )


def over_limit(ws: Workspace, after: str) -> str | None:
    """Why the step's snapshot stopped early (the workspace past the host's limits), or None."""
    return ws.load_manifest(after).over_limit


def skipped_note(ws: Workspace, before: str, after: str) -> str:
    """A note for the model and the person: files newly left out of the snapshots, and an
    error when the workspace is past the limits on its names."""
    old, new = ws.load_manifest(before), ws.load_manifest(after)
    note = ""
    if new.over_limit:
        note = (
            f"\n\nError: {new.over_limit}. The host keeps only the first part of the workspace "
            "in its snapshots, so resume, fork and undo cannot bring back the rest. Delete "
            "files (or pack them into fewer, e.g. one archive) before going on."
        )
    fresh = [(rel, why) for rel, why in new.skipped.items() if rel not in old.skipped]
    if not fresh and new.skipped_more <= old.skipped_more:
        return note
    shown = "; ".join(f"{rel} ({why})" for rel, why in fresh[:20])
    more = len(fresh) - 20 + max(new.skipped_more - old.skipped_more, 0)
    shown += f"; and {more} more" if more > 0 else ""
    return (
        note + "\n\nNote: not snapshotted, so resume, fork and undo cannot bring back their "
        f"content: {shown.removeprefix('; ')}"
    )
