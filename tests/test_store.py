"""The event spine on a real SQLite file: append, derived rows, migrations, backup."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3

from mlagent_tui.core.events import (
    AgentResponse,
    EventBus,
    ExecFinished,
    ExecOutput,
    FileChanged,
    PlanEdited,
    Recorder,
    ScoreRecorded,
    SessionEnded,
    SessionStarted,
)
from mlagent_tui.core.store import Store


def record_session(store: Store, session_id: str = "s1") -> Recorder:
    bus = EventBus()
    bus.subscribe(store.append)
    rec = Recorder(session_id, bus)
    rec.emit(SessionStarted(task="tiny", model="replay", agent="research"))
    rec.step = 1
    rec.emit(AgentResponse(action="Execute Script", action_input={"script_name": "a.py"}))
    rec.emit(ExecOutput(lines=["hello", "world"]))
    rec.emit(ExecFinished(command="python a.py", exit_code=0, duration_s=0.5, peak_rss_mb=12))
    rec.emit(FileChanged(path="a.py", before_hash=None, after_hash="ab", diff="+x"))
    rec.emit(PlanEdited(author="human", plan="1. do it"))
    rec.emit(ScoreRecorded(split="validate", score=0.8, valid=True))
    rec.emit(SessionEnded(reason="done", final_score=0.8, valid=True))
    return rec


def test_events_read_back_typed_and_ordered(store: Store) -> None:
    record_session(store)
    events = store.events("s1")
    assert [e.seq for e in events] == list(range(1, 9))
    assert isinstance(events[1].payload, AgentResponse)
    assert events[1].payload.action_input == {"script_name": "a.py"}
    assert events[2].payload.lines == ["hello", "world"]
    assert [e.kind for e in store.events("s1", kinds=["score_recorded"])] == ["score_recorded"]


def test_derived_rows_follow_events(store: Store) -> None:
    record_session(store)
    session = store.session("s1")
    assert session["status"] == "finished" and session["final_score"] == 0.8
    assert [r["action"] for r in store.rows("steps", "s1")] == ["Execute Script"]
    assert [r["exit_code"] for r in store.rows("executions", "s1")] == [0]
    assert [r["score"] for r in store.rows("scores", "s1")] == [0.8]
    assert [r["author"] for r in store.rows("plans", "s1")] == ["human"]
    assert [r["path"] for r in store.rows("file_versions", "s1")] == ["a.py"]
    assert store.next_seq("s1") == 9


def test_migrations_recorded_once_and_wal(home) -> None:
    first = Store(home.db_path)
    assert first.migrations()[:2] == ["m001_initial", "m002_step_observations"]
    assert "m003_full_text_search" in first.migrations()
    first.close()
    again = Store(home.db_path)
    assert again.migrate() == []
    assert again.status()["journal_mode"] == "wal"
    again.close()


def test_duplicate_seq_rolls_back_derived_rows(store: Store) -> None:
    """An event and its derived rows are one transaction: a failed insert leaves neither."""
    rec = record_session(store)
    rec.seq = 7  # collide with an existing event
    try:
        rec.emit(ScoreRecorded(split="validate", score=0.1, valid=True))
    except sqlite3.IntegrityError:
        pass
    assert [r["score"] for r in store.rows("scores", "s1")] == [0.8]


def test_backup_is_a_readable_copy(store: Store, tmp_path) -> None:
    record_session(store)
    dest = store.backup(tmp_path / "copy.db")
    copy = Store(dest)
    assert len(copy.events("s1")) == 8
    copy.close()


def _writer(path: str) -> None:
    store = Store(path)
    rec = Recorder("killed", _bus(store))
    rec.emit(SessionStarted(task="tiny"))
    for i in range(100_000):
        rec.emit(ExecOutput(lines=[f"line {i}"]))


def _bus(store: Store) -> EventBus:
    bus = EventBus()
    bus.subscribe(store.append)
    return bus


def test_kill_9_loses_no_committed_event(home) -> None:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_writer, args=(str(home.db_path),))
    proc.start()
    reader = None
    import time

    deadline = time.time() + 30
    while time.time() < deadline:
        if home.db_path.exists():
            reader = Store(home.db_path)
            if reader.next_seq("killed") > 200:
                break
            reader.close()
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    store = Store(home.db_path)
    events = store.events("killed")
    assert len(events) > 200
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_full_text_search_finds_sessions_by_their_steps(store: Store) -> None:
    record_session(store, "s1")
    bus = EventBus()
    bus.subscribe(store.append)
    other = Recorder("s2", bus)
    other.emit(SessionStarted(task="digits", model="openai/gpt-4o"))
    other.step = 1
    other.emit(AgentResponse(action="List Files", thought="try gradient boosting next"))
    assert [r["id"] for r in store.search_sessions("digits")] == ["s2"]
    assert [r["id"] for r in store.search_sessions("gradient boosting")] == ["s2"]
    assert {r["id"] for r in store.search_sessions("")} == {"s1", "s2"}
    assert store.search_sessions('weird "quotes (and) OR') == []


def test_closing_while_other_threads_read_and_write_is_a_clean_error(home) -> None:
    """A TUI timer or a session thread may still use the store when its owner closes it (a
    test fixture tearing down): each gets a StoreError, never a freed connection (a segfault)."""
    import threading

    from mlagent_tui.core.events import Event
    from mlagent_tui.core.store import StoreError

    for _ in range(20):
        store = Store(home.db_path)
        errors: list[BaseException] = []
        go = threading.Event()

        def use(kind: str, store: Store = store, errors: list = errors, go=go) -> None:  # noqa: ANN001
            go.wait()
            try:
                for i in range(2_000):
                    if kind == "read":
                        store.sessions(limit=50)
                        store.search_sessions("train")
                    else:
                        lines = ExecOutput(lines=[f"line {i}"])
                        store.append(Event(session_id="s-close", seq=i, ts=0.0, payload=lines))
            except StoreError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=use, args=(k,)) for k in ("read", "read", "write")]
        for t in threads:
            t.start()
        go.set()
        store.close()
        store.close()  # closing twice is harmless
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        assert all("is closed" in str(e) for e in errors)
