"""Search sessions on a Ray cluster: `bench --agents search --ray` runs each search whole on a
node (its workers overlap there) and lands its tree in this machine's store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlagent_tui.core.store import Store, bench_sessions

from .agent_helpers import write_replay
from .conftest import TINY, bwrap_ready
from .search_helpers import GOOD, reply
from .test_ray import bench_cmd, cluster, finish  # noqa: F401 - the fixture

pytest.importorskip("ray", reason="the scale extra (ray) is not installed")
pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def test_search_runs_on_the_nodes_and_lands_its_tree(tmp_path: Path, cluster) -> None:  # noqa: F811
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "search.jsonl", [reply(GOOD)] * 8)
    args = ["--task-dir", str(TINY), "--models", f"replay:{replay}", "--runs", "2"]
    args += ["--agents", "search", "--max-steps", "3", "--ray", cluster.address, "--json"]
    rc, out, err = finish(bench_cmd(home, *args))
    assert rc == 0, err
    report = json.loads(out)
    assert {r["status"] for r in report["runs"]} == {"budget"}  # 3 calls, then it ends
    assert all(r["node"] for r in report["runs"])  # each ran on a cluster node
    store = Store(home / "mlagent.db")
    try:
        for row in bench_sessions(store, report["bench_id"]):
            sid = row["session_id"]
            created = store.events(sid, kinds=["node_created"])
            finished = store.events(sid, kinds=["node_finished"])
            assert len(created) == len(finished) == 4  # the task's starter and 3 model calls
            assert created[0].payload.form == "starter"
            assert all(e.payload.status == "valid" for e in finished)
            assert store.events(sid, kinds=["selection_made"])
            nodes = list(store.db.query("SELECT * FROM nodes WHERE session_id = ?", [sid]))
            assert len(nodes) == 4  # the derived table was rebuilt where it landed
    finally:
        store.close()
