"""The search agent under attack and bad input: node workspace isolation (as root, local
backend), a hanging node, a node filling the disk, a crashing worker, kill -9 mid-search, a
person pruning the best branch, and bad options."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlagent_tui.core.search import workers as search_workers
from mlagent_tui.core.session import Session

from .conftest import ROOT, bwrap_ready
from .search_helpers import BAD, GOOD, reply, sleepy, start
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def set_limits(task: Path, **limits: object) -> None:
    """Change [limits] of a task folder copy (e.g. exec_timeout_s, disk_mb)."""
    toml = (task / "task.toml").read_text()
    for key, value in limits.items():
        lines = [ln for ln in toml.splitlines() if not ln.startswith(f"{key} =")]
        toml = "\n".join(lines).replace("[limits]", f"[limits]\n{key} = {value}", 1) + "\n"
    (task / "task.toml").write_text(toml)


def payloads(store, sid: str, kind: str) -> list:  # noqa: ANN001
    return [e.payload for e in store.events(sid, kinds=[kind])]


def attack(sibling: Path, home: Path) -> str:
    """A node script that tries to read and write its sibling's files by ../ and by absolute
    paths, and to leave a file in the home; it prints what it managed, then submits."""
    return (
        "import os\n"
        f"targets = ['../0001/solution.py', '{sibling}/solution.py', '{sibling}/secret.txt']\n"
        "for t in targets:\n"
        "    try:\n"
        "        print('READ', t, open(t).read()[:20].replace(chr(10), ' '))\n"
        "    except OSError as e:\n"
        "        print('DENIED read', t, e.errno)\n"
        f"for t in ['../0001/pwned', '{sibling}/pwned', '{home}/pwned']:\n"
        "    try:\n"
        "        open(t, 'w').write('x')\n"
        "        print('WROTE', t)\n"
        "    except OSError as e:\n"
        "        print('DENIED write', t, e.errno)\n" + GOOD
    )


def test_a_node_cannot_touch_a_siblings_workspace(tmp_path, home, store, tiny_task) -> None:
    """Node 1 sleeps (in flight) holding a secret; node 2 attacks it. Run as root."""
    victim = "open('secret.txt', 'w').write('the secret')\n" + sleepy(3)
    placeholder = tmp_path / "later"
    replies = [reply(victim), reply(attack(placeholder, home.root))]
    s = start(tmp_path, home, store, tiny_task, replies, workers=2, max_steps=2)
    sibling = home.root / "nodes" / s.id / "0001"
    # the attack names the real absolute path of the sibling
    replay = Path(s.config.model.split(":", 1)[1])
    replay.write_text(replay.read_text().replace(str(placeholder), str(sibling)))
    s.model.responses = [r.replace(str(placeholder), str(sibling)) for r in s.model.responses]
    s.run()
    done = {p.node: p for p in payloads(store, s.id, "node_finished")}
    out = done[2].output
    assert "READ" not in out.replace("DENIED read", ""), out
    assert "WROTE" not in out, out
    assert out.count("DENIED") == 6, out
    assert not (home.root / "pwned").exists()
    from mlagent_tui.core.workspace import Workspace

    ws = Workspace(tmp_path / "unused", home.snapshots(s.id))
    assert "pwned" not in ws.manifest("node-0001") and "secret.txt" in ws.manifest("node-0001")
    assert done[1].status == "valid"


def test_a_hanging_node_times_out_and_the_others_go_on(tmp_path, home, store, tiny_task) -> None:
    set_limits(tiny_task, exec_timeout_s=2)
    replies = [reply("while True:\n    pass\n"), reply(GOOD), reply(GOOD)]
    s = start(tmp_path, home, store, tiny_task, replies, workers=2, max_steps=3)
    result = s.run()
    done = {p.node: p for p in payloads(store, s.id, "node_finished")}
    assert done[1].status == "timed_out" and "time limit" in done[1].error
    assert done[2].status == done[3].status == "valid" and result.valid


def test_a_node_filling_the_disk_is_buggy(tmp_path, home, store, tiny_task) -> None:
    set_limits(tiny_task, disk_mb=20)
    fill = "with open('big.bin', 'wb') as fh:\n    for _ in range(200):\n"
    fill += "        fh.write(b'0' * 1048576)\n"
    s = start(tmp_path, home, store, tiny_task, [reply(fill), reply(GOOD)], workers=2, max_steps=2)
    result = s.run()
    done = {p.node: p for p in payloads(store, s.id, "node_finished")}
    assert done[1].status == "buggy" and "disk" in done[1].error
    assert done[2].status == "valid" and result.valid


def test_a_crashing_worker_fails_its_node_only(
    tmp_path, home, store, tiny_task, monkeypatch
) -> None:  # noqa: E501
    real = search_workers.NodeRunner.run

    def crash_on_two(self, node, script, on_start=None):  # noqa: ANN001, ANN202
        if node == 2:
            raise RuntimeError("worker lost")
        return real(self, node, script, on_start)

    monkeypatch.setattr(search_workers.NodeRunner, "run", crash_on_two)
    replies = [reply(GOOD)] * 3
    s = start(tmp_path, home, store, tiny_task, replies, workers=2, max_steps=3)
    result = s.run()
    done = {p.node: p for p in payloads(store, s.id, "node_finished")}
    assert (
        done[2].status == "buggy" and "worker crashed: RuntimeError: worker lost" in done[2].error
    )
    assert done[1].status == done[3].status == "valid" and result.valid


def test_pruning_the_best_branch_keeps_the_best_as_the_answer(
    tmp_path, home, store, tiny_task
) -> None:  # noqa: E501
    replies = [reply(GOOD), reply(BAD), reply(BAD)] + [reply(BAD)] * 3
    s = start(tmp_path, home, store, tiny_task, replies, workers=1, max_steps=6)
    s.subscribe(
        lambda e: s.search.prune(1) if e.kind == "node_finished" and e.payload.node == 1 else None
    )
    result = s.run()
    created = payloads(store, s.id, "node_created")
    assert all(1 not in n.parents for n in created)  # never expanded after the prune
    (sel,) = payloads(store, s.id, "selection_made")
    assert sel.node == 1 and result.valid and result.final_score == pytest.approx(0.0)
    assert store.rows("nodes", s.id)[0]["pruned"] == 1


KILL_SCRIPT = """
import sys
from mlagent_tui.core.home import Home
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store
home = Home.at(sys.argv[1])
config = SessionConfig(task_dir=sys.argv[2], model="replay:" + sys.argv[3], agent="search",
                       workers=2, max_steps=4, from_starter=False)
s = Session.create(home, Store(home.db_path), config)
print(s.id, flush=True)
s.run()
"""


def test_kill_9_mid_search_then_resume_restores_the_tree(tmp_path, home, store, tiny_task) -> None:
    from .agent_helpers import write_replay

    # node 2 runs until a wall-clock moment after the kill: in flight when killed, quick after
    until = f"import time\ntime.sleep(max(0, {time.time() + 12} - time.time()))\n" + GOOD
    replay = write_replay(tmp_path / "r.jsonl", [reply(GOOD), reply(until)] + [reply(GOOD)] * 3)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(home.root), str(tiny_task), str(replay)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    sid = proc.stdout.readline().strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        started = [p.node for p in payloads(store, sid, "node_started")]
        finished = [p.node for p in payloads(store, sid, "node_finished")]
        if 2 in started and 1 in finished:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 2 not in [p.node for p in payloads(store, sid, "node_finished")]
    s = Session.resume(home, store, sid)
    tree = s.search.tree
    assert {1, 2} <= set(tree.nodes) and tree.nodes[1].status == "valid"
    assert tree.nodes[2].status == "running"
    result = s.run()
    done = [p.node for p in payloads(store, sid, "node_finished")]
    assert sorted(done) == sorted(set(done)) and 2 in done  # node 2 ran again, node 1 not
    assert s.search.tree.nodes[2].status == "valid"
    assert result.steps == 4 and result.valid
    assert len(payloads(store, sid, "llm_call")) == 4  # no call was made twice


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "--workers"),
        (["--policy", "best"], "--policy 'best' is not one of: greedy, mcts, evolutionary"),
        (["--max-nodes", "0"], "--max-nodes"),
    ],
)
def test_bad_search_options_are_one_line(tmp_path, args, message) -> None:  # noqa: ANN001
    proc = mlagent(
        "run",
        "--task-dir",
        str(ROOT / "tests/data/tiny-task"),
        "--model",
        "replay:x.jsonl",
        "--agent",
        "search",
        *args,
        home=tmp_path / "home",
    )
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "home" / "workspaces").exists() or not any(
        (tmp_path / "home" / "workspaces").iterdir()
    )


def test_fork_of_a_missing_node_is_one_line(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, [reply(GOOD)], workers=1, max_steps=1)
    s.run()
    proc = mlagent("fork", s.id, "--node", "9", home=home.root)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: session {s.id} has no finished node #9 (nodes: #1)"


def test_a_stop_ends_the_search_with_a_selection(tmp_path, home, store, tiny_task) -> None:
    """A person's stop (e.g. the TUI's) mid-search: no new node, the best so far submitted."""
    replies = [reply(GOOD), reply(sleepy(1))] + [reply(GOOD)] * 6
    s = start(tmp_path, home, store, tiny_task, replies, workers=2, max_steps=8)
    s.subscribe(lambda e: s.stop() if e.kind == "node_finished" and e.payload.node == 1 else None)
    result = s.run()
    assert result.status == "stopped" and result.valid and result.steps < 8
    (sel,) = payloads(store, s.id, "selection_made")
    assert sel.node is not None
