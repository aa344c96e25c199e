"""What a prepared task folder looks like to a model: its files, the data's columns, a few rows
and the starter script.

A small model that never sees the columns invents them: it must read the names from
the prompt. The preview is a pure function of the prepared folder, and a task's prepare is
deterministic in its seed, so a live session (its fresh workspace) and the trainer (a temporary
copy prepared with the session's seed) build the same text.
"""

from __future__ import annotations

import csv
import functools
import tempfile
from pathlib import Path

from ..workspace import fs
from .spec import Task

MAX_COLUMNS = 40  # names listed per CSV before "... and N more"
MAX_ROW_CHARS = 160  # a sample row is cut here (images and texts have wide rows)
SAMPLE_ROWS = 2
MAX_SCRIPT_CHARS = 4_000  # the starter script is shown whole up to this size
DATA_SUFFIXES = (".csv", ".tsv")
MAX_STARTER_BYTES = 1 << 20  # of the workspace's starter script read by the host


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _csv_preview(path: Path, show_rows: bool, known: list[str] | None = None) -> str:
    """Header, row count and a few rows, read without loading the file."""
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            rows, count = [], 0
            for row in reader:
                if count < SAMPLE_ROWS:
                    rows.append(row)
                count += 1
    except (OSError, csv.Error) as exc:
        return f"{path.name}: unreadable ({exc})"
    names = ",".join(header[:MAX_COLUMNS])
    if len(header) > MAX_COLUMNS:
        names += f",... ({len(header) - MAX_COLUMNS} more)"
    if show_rows:  # the header line names the columns
        lines = [f"{path.name}: {count} rows, {len(header)} columns; its first rows:", names]
        return "\n".join(lines + [_cut(",".join(r), MAX_ROW_CHARS) for r in rows])
    if known and header and set(header) <= set(known):
        missing = [c for c in known if c not in header]
        but = f" except {', '.join(missing)}" if missing else ""
        return f"{path.name}: {count} rows, the same columns{but}"
    return f"{path.name}: {count} rows, {len(header)} columns: {names.replace(',', ', ')}"


def _header(path: Path) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            return next(csv.reader(fh), [])
    except (OSError, csv.Error):
        return []


def folder_preview(folder: Path, task: Task, skip: tuple[str, ...] = ()) -> str:
    """The files of a prepared folder, each CSV's columns (rows for the first data files) and
    the starter scripts, for the solve agent's prompt."""
    files = sorted(
        p for p in folder.iterdir() if p.is_file() and not p.is_symlink() and p.name not in skip
    )
    parts = ["Files: " + ", ".join(p.name for p in files)]
    data = [p for p in files if p.suffix in DATA_SUFFIXES]
    # rows of one file only, the training data where there is one (the widest otherwise)
    rows_of = max(data, key=lambda p: (p.name.startswith("train"), p.stat().st_size), default=None)
    known = _header(rows_of) if rows_of else None
    for p in sorted(data, key=lambda p: p != rows_of):
        parts.append(_csv_preview(p, p == rows_of, known if len(known or []) > 3 else None))
    for p in files:
        if p.suffix == ".py":
            code = p.read_text(encoding="utf-8", errors="replace")
            if len(code) > MAX_SCRIPT_CHARS:
                code = code[:MAX_SCRIPT_CHARS] + "\n# ... (cut)"
            parts.append(f"Starter file {p.name}:\n```python\n{code.rstrip()}\n```")
    submission = task.spec.submission
    if submission.columns:
        cols = ",".join([c for c in [submission.id_column] if c] + list(submission.columns))
        parts.append(f"The submission {submission.file} has the columns: {cols}")
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=64)
def _prepared_preview(folder: str, seed: int, skip: tuple[str, ...]) -> str:
    task = Task(Path(folder))
    with tempfile.TemporaryDirectory(prefix="mlagent-preview-") as tmp:
        ws, private = Path(tmp) / "ws", Path(tmp) / "private"
        task.prepare(ws, private, seed=seed)
        return folder_preview(ws, task, skip)


def task_preview(task: Task, seed: int = 0, skip: tuple[str, ...] = ()) -> str:
    """The preview of `task` prepared with `seed` (prepared once per process, then cached)."""
    return _prepared_preview(str(task.folder), seed, skip)


def runnable_starter(task: Task, root: Path) -> str | None:
    """The task's starter script in the prepared folder `root`, where the baseline runs one
    (`python train.py`) and the submission is a data file (a script submission is graded as the
    folder holds it, so running the starter proves nothing); None otherwise. The search's first
    node and the solve agent's first step run it as given: a valid solution to improve."""
    spec = task.spec
    cmd = spec.baseline.command.split()
    if spec.submission.file.endswith(".py"):
        return None
    if len(cmd) != 2 or cmd[0] not in ("python", "python3") or not cmd[1].endswith(".py"):
        return None
    text = fs.read_head(root, cmd[1], MAX_STARTER_BYTES)  # no-follow, regular, bounded
    return text if text and text.strip() else None
