"""Files replaced whole: a reader sees the old content or the new, never half of either.

The temporary file is made with `mkstemp` beside the target (same filesystem, a name nobody
can guess, O_EXCL so a link planted at a fixed `.tmp` name is never followed), takes the
target's permission bits (0644 for a new file, not mkstemp's 0600), and is renamed over the
target; on any failure it is removed, so a crash leaves no stray temporary behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_atomic(target: str | Path, data: str | bytes) -> Path:
    """Replace `target` with `data` (text is written as UTF-8) in one rename."""
    target = Path(target)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.lstat(target).st_mode)
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(raw)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
