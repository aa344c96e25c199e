"""A bounded diff of two stored objects: what the host shows of a file a step changed.

The agent picks what its files hold, and a line diff costs time quadratic in the lines in the
worst case, so only small texts are diffed (each side under MAX_DIFF_BYTES and MAX_DIFF_LINES,
lines cut at MAX_LINE_CHARS); anything larger is summarised by streaming both objects once:
sizes, line counts, hashes and where they first differ.
"""

from __future__ import annotations

import difflib
from pathlib import Path

MAX_DIFF_BYTES = 256 * 1024  # read at call time (tests lower them)
MAX_DIFF_LINES = 4_000
MAX_LINE_CHARS = 1_000
_CHUNK = 1 << 20
_SHOWN = 200  # characters of the first differing line, each side


def bounded_diff(rel: str, old: Path | None, new: Path | None) -> str:
    """A unified diff of the objects at `old` and `new` (None: no such side), or a summary
    where either is large or binary."""
    old_text, new_text = _small_text(old), _small_text(new)
    if old_text is None or new_text is None:
        return summarise(rel, old, new)
    fromfile, tofile = f"a/{rel}" if old else "/dev/null", f"b/{rel}" if new else "/dev/null"
    return text_diff(old_text, new_text, fromfile, tofile)


def text_diff(old: str, new: str, fromfile: str, tofile: str) -> str:
    """A unified diff of two texts already in memory, or a one-line note where either side
    is past MAX_DIFF_BYTES or MAX_DIFF_LINES (lines cut at MAX_LINE_CHARS)."""
    for text in (old, new):
        if len(text) > MAX_DIFF_BYTES or text.count("\n") > MAX_DIFF_LINES:
            return (
                f"--- {fromfile}\n+++ {tofile}\nToo large to diff: {len(old)} -> {len(new)} "
                f"characters, {old.count(chr(10))} -> {new.count(chr(10))} lines\n"
            )
    lines = difflib.unified_diff(_lines(old), _lines(new), fromfile=fromfile, tofile=tofile)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _small_text(path: Path | None) -> str | None:
    if path is None:
        return ""
    if path.stat().st_size > MAX_DIFF_BYTES:
        return None
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.count("\n") <= MAX_DIFF_LINES else None


def _lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines(keepends=True):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" ... ({len(line) - MAX_LINE_CHARS} more)\n"
        out.append(line)
    return out


def _stats(path: Path | None) -> tuple[int, int, bool]:
    """(bytes, lines, is text) of an object, read in chunks."""
    if path is None:
        return 0, 0, True
    size = lines = 0
    text = True
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            size += len(chunk)
            lines += chunk.count(b"\n")
            text = text and b"\x00" not in chunk
    return size, lines, text


def _first_difference(old: Path, new: Path) -> tuple[int, int, bytes, bytes] | None:
    """(byte offset, line number, the line on each side) where two objects first differ."""
    offset = line = 0
    with old.open("rb") as a, new.open("rb") as b:
        while True:
            x, y = a.read(_CHUNK), b.read(_CHUNK)
            if x != y:
                at = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), None)
                at = min(len(x), len(y)) if at is None else at
                start = x.rfind(b"\n", 0, at) + 1
                line += x.count(b"\n", 0, at)
                return offset + at, line + 1, _line_at(x, start), _line_at(y, start)
            if not x:
                return None
            offset += len(x)
            line += x.count(b"\n")


def _line_at(chunk: bytes, start: int) -> bytes:
    end = chunk.find(b"\n", start)
    return chunk[start : end if end >= 0 else len(chunk)][: _SHOWN * 4]


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return text if len(text) <= _SHOWN else text[:_SHOWN] + " ..."


def summarise(rel: str, old: Path | None, new: Path | None) -> str:
    """What changed in a file too large (or too binary) to diff, found in one pass of each."""
    (a_size, a_lines, a_text), (b_size, b_lines, b_text) = _stats(old), _stats(new)
    if not (a_text and b_text):
        return f"Binary file {rel} changed ({a_size} -> {b_size} bytes)\n"
    head = [
        f"--- a/{rel}" if old else "--- /dev/null",
        f"+++ b/{rel}" if new else "+++ /dev/null",
        f"Large file {rel} changed, not diffed (each side is diffed under "
        f"{MAX_DIFF_BYTES >> 10} KB and {MAX_DIFF_LINES} lines):",
        f"  before: {a_size} bytes, {a_lines} lines, sha256 {old.name if old else '-'}",
        f"  after:  {b_size} bytes, {b_lines} lines, sha256 {new.name if new else '-'}",
    ]
    found = _first_difference(old, new) if old and new else None
    if found:
        at, line, x, y = found
        head += [
            f"  first difference at byte {at}, line {line}:",
            f"  - {_shown(x)}",
            f"  + {_shown(y)}",
        ]
    return "\n".join(head) + "\n"
