"""`mlagent bench --agents`: agents compared at one budget, one report row per agent; an older
bench record (one `agent`, rows without one) still reads and resumes after the migration."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from mlagent_tui.core.bench import BenchRunner, build_report, make_config, resolve_tasks
from mlagent_tui.core.home import Home
from mlagent_tui.core.store import Store, bench_sessions
from mlagent_tui.core.store.migrations import MIGRATIONS

from .agent_helpers import research, write_replay
from .conftest import TINY, bwrap_ready
from .test_cli import mlagent

# Looks around, validates the baseline's own predictions, then the replay runs out: each agent
# ends with the task's auto-submission (a solve or search agent reads these as parse errors).
RESPONSES = [research("List Files", {"dir_path": "."}), research("Validate", {})]


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_two_agents_one_task_one_seed_share_one_budget(tmp_path: Path) -> None:
    replay = write_replay(tmp_path / "r.jsonl", RESPONSES)
    home = tmp_path / "home"
    args = ["bench", "--task-dir", str(TINY), "--models", f"replay:{replay}"]
    args += ["--agents", "research,solve", "--max-steps", "3", "--max-minutes", "2"]
    proc = mlagent(*args, "--out", str(tmp_path / "out"), "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [(r["model"], r["agent"]) for r in out["results"]] == [
        (f"replay:{replay}", "research"),
        (f"replay:{replay}", "solve"),
    ]
    assert [a["agent"] for a in out["agents"]] == ["research", "solve"]
    assert all(a["runs"] == 1 for a in out["agents"])
    # one AUP per (model, agent) method, on the same axis
    names = {f"replay:{replay} [research]", f"replay:{replay} [solve]"}
    assert set(out["aup"]["best_submission"]) == names | {"baseline"}
    assert {r["agent"] for r in out["runs"]} == {"research", "solve"}
    # the same budget for both: each session ran under --max-steps 3
    store = Store(Home.at(home).db_path)
    try:
        for r in out["runs"]:
            config = json.loads(store.session(r["session_id"])["config"])
            assert (config["agent"], config["max_steps"], config["max_minutes"]) == (
                r["agent"],
                3,
                2,
            )
            assert r["status"] != "crashed"
    finally:
        store.close()
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| research | 1 |" in md and "| solve | 1 |" in md  # the per-agent table
    text = mlagent("bench", "report", out["bench_id"], home=home)
    assert text.returncode == 0, text.stderr
    assert "research" in text.stdout and "solve" in text.stdout and "selection gap" in text.stdout


def test_agent_and_agents_together_is_a_usage_error(tmp_path: Path) -> None:
    replay = write_replay(tmp_path / "r.jsonl", RESPONSES)
    base = ["bench", "--task-dir", str(TINY), "--models", f"replay:{replay}"]
    for extra, words in (
        (["--agent", "solve", "--agents", "research,solve"], "not both"),
        (["--agents", "research,nope"], "unknown agent"),
        (["--agents", "solve,solve"], "twice"),
    ):
        proc = mlagent(*base, *extra, home=tmp_path / "home")
        assert proc.returncode == 2, (extra, proc.stderr)
        assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "home" / "bench").exists()


def test_a_bench_recorded_before_agents_reads_and_resumes(tmp_path: Path) -> None:
    """A store at the schema before m009, with a bench whose config names one `agent`."""
    home = Home.at(tmp_path / "home")
    replay = write_replay(tmp_path / "r.jsonl", RESPONSES)
    config = make_config(resolve_tasks(None, [TINY]), [f"replay:{replay}"], agent="solve", runs=2)
    old = config.model_dump()
    del old["agents"]
    home.db_path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite_utils.Database(sqlite3.connect(str(home.db_path)))
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for name, fn in MIGRATIONS:
        if name == "m009_bench_agents":
            break
        fn(db)
        db.execute("INSERT INTO _migrations VALUES (?, datetime('now'))", [name])
    db.execute(
        "INSERT INTO bench_runs (id, created_at, status, config) VALUES (?,?,?,?)",
        ["bench-old", 1.0, "interrupted", json.dumps(old)],
    )
    db.execute(
        "INSERT INTO bench_sessions (bench_id, task, model, run_index, status, error)"
        " VALUES (?,?,?,?,?,?)",
        ["bench-old", "tiny-task", f"replay:{replay}", 0, "crashed", "RuntimeError: boom"],
    )
    db.conn.commit()
    db.conn.close()

    store = Store(home.db_path)
    try:
        assert "m009_bench_agents" in store.migrations()
        rows = bench_sessions(store, "bench-old")
        assert [(r["agent"], r["run_index"], r["error"]) for r in rows] == [
            ("solve", 0, "RuntimeError: boom")
        ]
        report = build_report(store, "bench-old")
        assert report.config.agents == ["solve"] and report.results[0].agent == "solve"
        pending = BenchRunner(home, store, "bench-old", report.config).pending()
        assert [(j.agent, j.run_index) for j in pending] == [("solve", 1)]
    finally:
        store.close()
