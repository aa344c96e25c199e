"""Helpers for search tests: solve-format replies, scripts for the tiny task, a search session."""

from __future__ import annotations

import json
from pathlib import Path

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store

from .agent_helpers import write_replay

# the tiny task's answer at seed 0 is y = 2x: GOOD is exact (mae 0)
_WRITE = """import csv
test = list(csv.DictReader(open('test.csv')))
with open('submission.csv', 'w') as fh:
    fh.write('id,y\\n')
    for row in test:
        fh.write(f"{row['id']},{2 * int(row['x']) + OFFSETS.get(int(row['id']), DEFAULT)}\\n")
print('done')
"""
GOOD = "OFFSETS, DEFAULT = {}, 0\n" + _WRITE
BAD = 'print("oops")\nraise SystemExit(1)\n'

# the tiny task with 40 validation rows (ids 40..79), enough for a hidden split
SPLIT_PREPARE = """import argparse
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--public", type=Path, required=True)
parser.add_argument("--private", type=Path, required=True)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
rows = [(i, i % 7, 2 * (i % 7) + (args.seed % 3)) for i in range(120)]
(args.public / "train.csv").write_text(
    "id,x,y\\n" + "".join(f"{i},{x},{y}\\n" for i, x, y in rows[:40])
)
(args.public / "test.csv").write_text("id,x\\n" + "".join(f"{i},{x}\\n" for i, x, _ in rows[40:]))
(args.public / "sample_submission.csv").write_text(
    "id,y\\n" + "".join(f"{i},100\\n" for i, _, _ in rows[40:])
)
(args.private / "validate.csv").write_text(
    "id,y\\n" + "".join(f"{i},{y}\\n" for i, _, y in rows[40:80])
)
(args.private / "test.csv").write_text("id,y\\n" + "".join(f"{i},{y}\\n" for i, _, y in rows[80:]))
"""


def reply(script: str, plan: str | None = None) -> str:
    """A solve-format reply; the plan defaults to the script's first line."""
    plan = plan if plan is not None else f"try {script.splitlines()[0][:60]}"
    return f"Plan: {plan}\n```python\n{script}```\n"


def offset_script(offsets: dict[int, float], default: float) -> str:
    """y = 2x plus a per-id offset (`default` for ids not listed)."""
    return f"OFFSETS, DEFAULT = {offsets!r}, {default!r}\n" + _WRITE


def sleepy(seconds: float) -> str:
    """GOOD after a sleep: a node that takes a while to run."""
    return f"import time\ntime.sleep({seconds})\n" + GOOD


def start(folder: Path, home, store, task: Path, replies: list[str], **cfg) -> Session:  # noqa: ANN001, ANN003
    """A search session on `task` whose model replies with `replies` in order."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg.setdefault("from_starter", False)  # the trees below are the replies' alone
    replay = write_replay(folder / "replay.jsonl", replies)
    config = SessionConfig(task_dir=str(task), model=f"replay:{replay}", agent="search", **cfg)
    return Session.create(home, store, config)


def run_with_each_flag(
    folder: Path, task: Path, replies: list[str], flags: tuple[str, ...], *args: str
) -> dict[str, tuple[Store, str]]:
    """`mlagent run --task-dir TASK --model replay:... ARGS FLAG --json` once per flag, each in
    a home of its own: the flag's store and session id."""
    from .test_cli import mlagent

    replay = write_replay(folder / "r.jsonl", replies)
    out = {}
    for flag in flags:
        home = folder / flag
        cmd = ["--task-dir", str(task), "--model", f"replay:{replay}", *args, flag, "--json"]
        proc = mlagent("run", *cmd, home=home)
        assert proc.returncode in (0, 3), proc.stderr
        out[flag] = (Store(home / "mlagent.db"), json.loads(proc.stdout)["session_id"])
    return out
