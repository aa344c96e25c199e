"""The one check for a workspace path or an object name read back from stored data.

A snapshot manifest, the undo journal and a bundle from another machine are data the host
later acts on (fork, undo and landing write what they name), and any of them may have been
written or altered by someone else. So every model that holds such a path types it `RelPath`
and every content hash `Digest`: a value that is not already in the canonical form the host
writes is refused when the data is read, before anything touches the disk.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

NAME_MAX = 255
PATH_MAX = 4096
_DIGEST = re.compile(r"[0-9a-f]{64}")


def check_rel(value: str) -> str:
    """`value` when it is a normalised path inside the workspace, else ValueError.

    Refused: empty, absolute, a `..`, `.` or empty component (so no `a//b`, `./a`, `a/`),
    a backslash (a separator elsewhere), a NUL or another control character, a lone surrogate
    that no file name decodes to, and names past the kernel's limits.
    """
    if not isinstance(value, str) or not value:
        raise ValueError("an empty path")
    if value.startswith("/"):
        raise ValueError(f"{value[:200]!r} is an absolute path")
    if "\\" in value:
        raise ValueError(f"{value[:200]!r} contains a backslash")
    if any(ord(c) < 0x20 or c == "\x7f" for c in value):
        raise ValueError(f"{value[:200]!r} contains a control character")
    try:  # a name of bytes that are not UTF-8 reads back as Python's surrogate escapes
        size = len(value.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        raise ValueError(f"{value[:200]!r} is not a file name of this system") from None
    if size > PATH_MAX:
        raise ValueError(f"a path of {size} bytes (at most {PATH_MAX})")
    for part in value.split("/"):
        if part in ("", ".", ".."):
            raise ValueError(f"{value[:200]!r} is not a normalised path inside the workspace")
        if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise ValueError(f"a name of over {NAME_MAX} bytes in {value[:200]!r}")
    return value


def check_digest(value: str) -> str:
    """`value` when it is a sha256 in lowercase hex (an object's file name), else ValueError."""
    if not isinstance(value, str) or not _DIGEST.fullmatch(value):
        raise ValueError(f"{str(value)[:80]!r} is not a content hash")
    return value


def first_error(exc: Exception) -> str:
    """One line out of a pydantic ValidationError (or any error): its first message."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            return str(first.get("msg", exc)).removeprefix("Value error, ")
        except (IndexError, TypeError):
            pass
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


RelPath = Annotated[str, AfterValidator(check_rel)]
Digest = Annotated[str, AfterValidator(check_digest)]
