"""Digests of files that cannot have changed since an earlier snapshot, so a step re-reads
only what changed: a tree of 100k unchanged files is walked (stat), not read and hashed."""

from __future__ import annotations

import time

from .fs import Entry

_SETTLE_NS = 1_000_000_000


class HashCache:
    """rel -> ((inode, size, mtime, ctime, when hashed), digest), as of the last snapshot.

    A hit needs the same inode, size, mtime and ctime (no process can set a ctime back), and a
    ctime over a second before the hashing began, so a write in the same clock tick as the
    hashing is never missed (git's "racy" rule).
    """

    def __init__(self) -> None:
        self._known: dict[str, tuple[tuple[int, ...], str]] = {}
        self._next: dict[str, tuple[tuple[int, ...], str]] = {}
        self._started = 0

    def begin(self) -> None:
        self._next, self._started = {}, time.time_ns()

    def lookup(self, entry: Entry) -> str | None:
        known = self._known.get(entry.rel)
        if known is None:
            return None
        stamp, digest = known
        st = entry.st
        if stamp[:4] != (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns):
            return None
        if st.st_ctime_ns >= stamp[4] - _SETTLE_NS:
            return None
        self._next[entry.rel] = known
        return digest

    def record(self, entry: Entry, digest: str) -> None:
        st = entry.st
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, self._started)
        self._next[entry.rel] = (stamp, digest)

    def commit(self) -> None:
        """What this snapshot saw becomes what the next one trusts (strays are forgotten)."""
        self._known, self._next = self._next, {}
