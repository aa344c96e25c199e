"""What one step costs the host in a workspace of many files: time, snapshot bytes, database
bytes and the process's peak memory.

The files are made on disk before the first step (as a script run by the agent would), then
each step is a Write File of one small file: the first step sees the whole tree appear, the
later ones an unchanged tree. The snapshot area (manifests and the objects they add) and the
database (with its WAL) are measured before and after each step.

    .venv/bin/python benchmarks/bench_many_files.py [--files 100000] [--steps 3] [--name-len 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from mlagent_tui.core.home import Home
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store

TASK = "house-prices"


def response(action: str, args: dict) -> str:
    return (
        "Reflection: ok\nResearch Plan and Status: 1. explore **in progress**\nFact Check: none\n"
        f"Thought: next\nAction: {action}\nAction Input: {json.dumps(args)}\n"
    )


def tree_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def make_files(root: Path, count: int, name_len: int) -> None:
    pad = "x" * max(0, name_len - 12)
    for i in range(count):
        folder = root / "data" / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:06d}{pad}.txt").touch()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--name-len", type=int, default=20, help="characters per file name")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "replay.jsonl"
        steps = [
            response("Write File", {"file_name": "notes.py", "content": f"x = {i}\n"})
            for i in range(args.steps)
        ]
        replay.write_text("".join(json.dumps({"content": c}) + "\n" for c in steps))
        home = Home.at(Path(tmp) / "home")
        store = Store(home.db_path)
        session = Session.create(
            home, store, SessionConfig(task=TASK, model=f"replay:{replay}", max_steps=args.steps)
        )
        start = time.perf_counter()
        make_files(session.workspace.root, args.files, args.name_len)
        print(
            f"{args.files} empty files, names of {args.name_len} characters "
            f"(made in {time.perf_counter() - start:.1f} s)"
        )
        from mlagent_tui.core.sandbox import make_executor

        session._executor = make_executor("local", workspace=session.workspace.root)
        meta = home.snapshots(session.id)
        for step in range(1, args.steps + 1):
            meta0, db0 = tree_bytes(meta), db_bytes(store.path)
            start = time.perf_counter()
            session.run_step()
            took = time.perf_counter() - start
            meta1, db1 = tree_bytes(meta), db_bytes(store.path)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            finished = store.events(session.id, kinds=["action_finished"])[-1].payload
            error = (
                " (step error: over a limit)"
                if "Error: the workspace" in (finished.observation)
                else ""
            )
            print(
                f"step {step}: {took:6.2f} s, snapshot area +{(meta1 - meta0) / 1e6:8.3f} MB, "
                f"database +{(db1 - db0) / 1e6:8.3f} MB, peak memory {peak:6.0f} MB{error}"
            )
        session._executor.close()
        print(
            f"events stored: {len(store.events(session.id))}, snapshot area "
            f"{tree_bytes(meta) / 1e6:.1f} MB, database {db_bytes(store.path) / 1e6:.1f} MB"
        )
        store.close()


if __name__ == "__main__":
    main()
