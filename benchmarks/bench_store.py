"""Store throughput: events/s appended one transaction each, and a 10k-event read back."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from mlagent_tui.core.events import EventBus, ExecOutput, Recorder, SessionStarted
from mlagent_tui.core.store import Store

N = 10_000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        bus = EventBus()
        bus.subscribe(store.append)
        rec = Recorder("bench", bus)
        rec.emit(SessionStarted(task="bench"))
        start = time.perf_counter()
        for i in range(N):
            rec.emit(ExecOutput(lines=[f"epoch {i} loss {1 / (i + 1):.5f}"]))
        append_s = time.perf_counter() - start
        start = time.perf_counter()
        events = store.events("bench")
        read_s = time.perf_counter() - start
        assert len(events) == N + 1
        print(
            f"append: {N / append_s:,.0f} events/s ({N} events, one transaction each; "
            f"target >= 5,000/s)"
        )
        print(f"read:   {read_s:.3f} s for {len(events)} events as objects (target <= 0.25 s)")


if __name__ == "__main__":
    main()
