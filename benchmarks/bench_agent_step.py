"""Agent overhead per step with the replay model, excluding model and execution time.

Steps are file and memory actions (no script runs), so what is measured is the prompt,
parsing, the action, the snapshot and the events written to SQLite.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from mlagent_tui.core.home import Home
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store

STEPS = 200
TASK = "house-prices"


def response(action: str, args: dict) -> str:
    return (
        "Reflection: ok\nResearch Plan and Status: 1. explore **in progress**\nFact Check: none\n"
        f"Thought: next\nAction: {action}\nAction Input: {json.dumps(args)}\n"
    )


def main() -> None:
    cycle = [
        response("List Files", {"dir_path": "."}),
        response("Read File", {"file_name": "train.py"}),
        response("Write File", {"file_name": "notes.py", "content": "# notes\nx = 1\n"}),
        response("Memory Write", {"content": "the baseline is linear regression #baseline"}),
        response("Memory Read", {"query": "baseline"}),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "replay.jsonl"
        replay.write_text(
            "".join(
                json.dumps({"content": c}) + "\n"
                for c in (cycle * (STEPS // len(cycle) + 1))[:STEPS]
            )
        )
        home = Home.at(Path(tmp) / "home")
        store = Store(home.db_path)
        session = Session.create(
            home, store, SessionConfig(task=TASK, model=f"replay:{replay}", max_steps=STEPS)
        )
        times: list[float] = []
        model_time = [0.0]
        session.subscribe(
            lambda e: model_time.__setitem__(
                0, model_time[0] + (e.payload.latency_s if e.kind == "llm_call" else 0)
            )
        )
        from mlagent_tui.core.sandbox import make_executor

        session._executor = make_executor("local", workspace=session.workspace.root)
        for _ in range(STEPS):
            before = model_time[0]
            start = time.perf_counter()
            session.run_step()
            times.append(time.perf_counter() - start - (model_time[0] - before))
        session._executor.close()
        ms = sorted(t * 1000 for t in times)
        print(
            f"agent overhead per step ({STEPS} steps, replay model, {TASK}): "
            f"median {statistics.median(ms):.1f} ms, p90 {ms[int(len(ms) * 0.9)]:.1f} ms "
            f"(target: median <= 20 ms)"
        )


if __name__ == "__main__":
    main()
