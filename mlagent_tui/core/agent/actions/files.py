"""File actions, with MLAgentBench's names and argument names: list, read, write, append, copy,
inspect and undo. Every host read and write goes through the workspace's guard.
"""

from __future__ import annotations

from pydantic import BaseModel

from .registry import ActionContext, ActionError, Observation, action

MAX_READ_CHARS = 20_000
MAX_HOST_READ_BYTES = 64 * 1024 * 1024  # what the host reads of one file for an action
MAX_LISTED = 1_000


# -- inputs (MLAgentBench's argument names) ------------------------------------------------
class ListFilesInput(BaseModel):
    dir_path: str


class FileNameInput(BaseModel):
    file_name: str


class WriteFileInput(BaseModel):
    file_name: str
    content: str


class CopyFileInput(BaseModel):
    source: str
    destination: str


class InspectLinesInput(BaseModel):
    script_name: str
    start_line_number: int
    end_line_number: int


class ScriptNameInput(BaseModel):
    script_name: str


# -- file actions ------------------------------------------------------------------------
def read_text(ctx: ActionContext, name: str, limit: int = MAX_HOST_READ_BYTES) -> str:
    """A workspace file as text, read without following links (at most `limit` bytes)."""
    kind = ctx.workspace.kind(name)
    if kind is None:
        raise ActionError(f"{name} does not exist. Use List Files to see what is there.")
    if kind == "dir":
        raise ActionError(f"{name} is a directory; use List Files on it.")
    if kind == "link":
        raise ActionError(f"{name} is a symbolic link; links are not followed")
    data = ctx.workspace.read_bytes(name, limit + 1)
    cut = len(data) > limit
    data = data[:limit]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not cut or exc.start < len(data) - 3:  # not just a character cut at the limit
            raise ActionError(f"{name} is a binary file ({len(data)} bytes)") from exc
        text = data[: exc.start].decode("utf-8")
    return text + (f"\n[... the file goes on past {limit} bytes]" if cut else "")


@action(
    "List Files",
    "Use this to navigate the file system: lists the files and folders in a directory.",
    ListFilesInput,
)
def list_files(ctx: ActionContext, args: ListFilesInput) -> Observation:
    if ctx.workspace.kind(args.dir_path or ".") not in ("dir", None):
        raise ActionError(f"{args.dir_path} is not a directory")
    rows = ctx.workspace.listing(args.dir_path or ".")
    rows.sort(key=lambda r: (r[1] != "dir", r[0]))
    suffix = {"dir": "/", "link": " (symbolic link)", "other": " (special file)"}
    lines = [
        f"{name} ({size} bytes)" if kind == "file" else f"{name}{suffix.get(kind or '', '')}"
        for name, kind, size in rows[:MAX_LISTED]
    ]
    if len(rows) > MAX_LISTED:
        lines.append(f"[... {len(rows) - MAX_LISTED} more entries]")
    return Observation(text="\n".join(lines) or "(empty directory)")


@action("Read File", "Use this to read an existing file.", FileNameInput)
def read_file(ctx: ActionContext, args: FileNameInput) -> Observation:
    text = read_text(ctx, args.file_name, limit=MAX_READ_CHARS * 8)
    if len(text) > MAX_READ_CHARS:
        text = text[:MAX_READ_CHARS] + f"\n[... {len(text) - MAX_READ_CHARS} more characters]"
    return Observation(text=text)


@action(
    "Write File", "Use this to write a file. If the file exists it is overwritten.", WriteFileInput
)
def write_file(ctx: ActionContext, args: WriteFileInput) -> Observation:
    ctx.workspace.write(args.file_name, args.content)
    return Observation(text=f"File {args.file_name} written successfully.")


@action("Append File", "Use this to append text to the end of a file.", WriteFileInput)
def append_file(ctx: ActionContext, args: WriteFileInput) -> Observation:
    ctx.workspace.resolve(args.file_name, for_write=True)
    old = read_text(ctx, args.file_name) if ctx.workspace.kind(args.file_name) else ""
    ctx.workspace.write(args.file_name, old + args.content)
    return Observation(text=f"File {args.file_name} appended successfully.")


@action("Copy File", "Use this to copy a file to a new location.", CopyFileInput)
def copy_file(ctx: ActionContext, args: CopyFileInput) -> Observation:
    kind = ctx.workspace.kind(args.source)
    if kind == "link":
        raise ActionError(f"{args.source} is a symbolic link; links are not followed")
    if kind != "file":
        raise ActionError(f"{args.source} does not exist or is not a file")
    data = ctx.workspace.read_bytes(args.source, MAX_HOST_READ_BYTES + 1)
    if len(data) > MAX_HOST_READ_BYTES:
        raise ActionError(
            f"{args.source} is larger than {MAX_HOST_READ_BYTES // 2**20} MB; "
            "copy it with a script (Execute Script)"
        )
    ctx.workspace.write(args.destination, data)
    return Observation(text=f"File {args.source} copied to {args.destination}.")


@action(
    "Inspect Script Lines",
    "Use this to inspect specific lines of a script (at most 100 lines at a time).",
    InspectLinesInput,
)
def inspect_lines(ctx: ActionContext, args: InspectLinesInput) -> Observation:
    lines = read_text(ctx, args.script_name).splitlines()
    start, end = max(args.start_line_number, 1), args.end_line_number
    if end < start:
        raise ActionError("end_line_number must not be smaller than start_line_number")
    if end - start >= 100:
        raise ActionError("the number of lines to display is limited to 100")
    shown = "\n".join(f"{i}: {lines[i - 1]}" for i in range(start, min(end, len(lines)) + 1))
    return Observation(text=f"Here are the lines (the file ends at line {len(lines)}):\n\n{shown}")


@action(
    "Undo Edit Script",
    "Use this to undo the last edit of a script.",
    ScriptNameInput,
)
def undo_edit(ctx: ActionContext, args: ScriptNameInput) -> Observation:
    ctx.workspace.undo_last_edit(args.script_name)
    exists = ctx.workspace.kind(args.script_name) is not None
    content = read_text(ctx, args.script_name) if exists else "(the file no longer exists)"
    return Observation(text=f"Content of {args.script_name} after undo:\n{content}")
