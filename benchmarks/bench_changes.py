"""The host's change summary for a step that rewrote one big text file.

After each step the host describes every changed file (a FileChanged event's diff, the note
for the model). A line diff is quadratic in the worst case, so a large side is summarised in
one streaming pass instead; this prints how long that takes for 8.5 MB and 50 MB rewrites,
with the rows kept in order and shuffled (the shape that costs a line diff most).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from mlagent_tui.core.workspace import Workspace

GOAL_S = 1.0


def rows(size: int, tag: str, shuffle: bool) -> bytes:
    out = [f"{tag},{i:012d},a row of a big text file\n".encode() for i in range(size // 40)]
    if shuffle:
        random.Random(0).shuffle(out)
    return b"".join(out)


def measure(mb: float, shuffle: bool) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        ws = Workspace(root, Path(tmp) / "meta")
        size = int(mb * 1024 * 1024)
        (root / "big.csv").write_bytes(rows(size, "a", False))
        before = ws.snapshot("before")["big.csv"]
        (root / "big.csv").write_bytes(rows(size, "a" if shuffle else "b", shuffle))
        after = ws.snapshot("after")["big.csv"]
        start = time.perf_counter()
        diff = ws.diff_objects("big.csv", before, after)
        return time.perf_counter() - start, len(diff)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="+", default=[8.5, 50.0])
    args = parser.parse_args()
    for mb in args.mb:
        for shuffle in (False, True):
            took, chars = measure(mb, shuffle)
            kind = "shuffled" if shuffle else "rewritten"
            verdict = "ok" if took <= GOAL_S else f"over the {GOAL_S:.0f} s goal"
            print(f"{mb:g} MB {kind}: change summary {took:.3f} s, {chars} characters ({verdict})")


if __name__ == "__main__":
    main()
