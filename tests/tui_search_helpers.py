"""Helpers for search-session tests: scripted solve-format replies and a short search session."""

from __future__ import annotations

from pathlib import Path

from mlagent_tui.core.session import Session, SessionConfig

from .agent_helpers import write_replay

# the tiny task's answer is y = 2x + (seed % 3): offset 0 is exact at seed 0
SCRIPT = """import csv
test = list(csv.DictReader(open('test.csv')))
with open('submission.csv', 'w') as fh:
    fh.write('id,y\\n')
    for row in test:
        fh.write(f"{row['id']},{2 * int(row['x']) + OFFSET}\\n")
print('done')
"""


def solve(plan: str, script: str) -> str:
    return f"Plan: {plan}\n```python\n{script}```\n"


def offset(n: int) -> str:
    return solve(f"predict 2x + {n}", SCRIPT.replace("OFFSET", str(n)))


# drafts #1 (valid), #2 (buggy), #3 (valid, the best), then improvements of the best
REPLIES = [
    offset(1),
    solve("crash on purpose", "raise SystemExit('boom')\n"),
    offset(0),
    offset(2),
    offset(3),
    offset(4),
    offset(5),
]


def search_session(
    folder: Path,
    home,
    store,
    task: Path,
    replies: list[str] = REPLIES,
    **cfg,  # noqa: ANN001, ANN003
) -> Session:
    """A search session (greedy, one worker: a fixed order of nodes) with scripted replies."""
    replay = write_replay(folder / "search-replay.jsonl", replies)
    options = {"workers": 1, "max_nodes": 5, "from_starter": False, **cfg}
    config = SessionConfig(task_dir=str(task), model=f"replay:{replay}", agent="search", **options)
    return Session.create(home, store, config)


class Blocking:
    """A model that stops at its `at`-th call until released: a search caught mid-way."""

    def __init__(self, inner, at: int) -> None:  # noqa: ANN001
        import threading

        self.inner, self.at = inner, at
        self.name, self.supports_grammar = inner.name, inner.supports_grammar
        self.calls = 0
        self.blocked, self.release = threading.Event(), threading.Event()

    def complete(self, messages, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.calls += 1
        if self.calls == self.at:
            self.blocked.set()
            self.release.wait(timeout=120)
        return self.inner.complete(messages, **kwargs)
