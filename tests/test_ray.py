"""`mlagent bench --ray`: a real two-node Ray cluster on this machine (a head and a second raylet,
one CPU each), a bench with a replay model, and what must hold of it: runs on both nodes, each
session in the head's store once and whole, replay and fork of a run that ran elsewhere, Ctrl-C
then `--resume`, and a node killed mid-bench whose run is retried on the other.

Every Ray process is started here with `ray start --block` and stopped by PID (its own and its
children's), never by `ray stop`, which would also stop other users' clusters."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlagent_tui.core.scale.local_cluster import FAST_HEALTH, LocalCluster, cmdline, descendants
from mlagent_tui.core.session import Session
from mlagent_tui.core.store import Store, bench_sessions

from .agent_helpers import research, write_replay
from .conftest import ROOT, TINY, bwrap_ready

pytest.importorskip("ray", reason="the scale extra (ray) is not installed")
pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def solve_script(sleep_s: float) -> str:
    """Predicts 2x + 0.5 where the answer is 2x (MAE 0.5, bronze), after `sleep_s` seconds."""
    return (
        f"import csv, time\ntime.sleep({sleep_s})\n"
        "rows = list(csv.DictReader(open('test.csv')))\n"
        "with open('submission.csv', 'w') as fh:\n"
        "    fh.write('id,y\\n')\n"
        "    for r in rows:\n"
        "        fh.write(f\"{r['id']},{2 * int(r['x']) + 0.5}\\n\")\n"
    )


def responses(sleep_s: float) -> list[str]:
    return [
        research("Write File", {"file_name": "slow.py", "content": solve_script(sleep_s)}),
        research("Execute Script", {"script_name": "slow.py"}),
        research("Validate", {}),
        research("Final Answer", {"final_answer": "2x + 0.5"}),
    ]


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    c = LocalCluster(cwd=ROOT)
    try:
        c.start(head=True)
        c.start()
        yield c
    finally:
        c.stop()


def bench_cmd(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home), **FAST_HEALTH}
    return subprocess.Popen(
        [sys.executable, "-m", "mlagent_tui", "bench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        # Ctrl-C as a terminal sends it, even where this suite runs as a background job (which
        # starts with SIGINT ignored, and the bench would inherit that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def check_each_once(home: Path, bench_id: str, runs: int) -> list[dict]:
    """Every run done, with a session of its own that is in the store once and whole."""
    store = Store(home / "mlagent.db")
    try:
        rows = bench_sessions(store, bench_id)
        assert len(rows) == runs and all(r["status"] == "done" for r in rows), rows
        sids = [r["session_id"] for r in rows]
        assert len(set(sids)) == runs
        assert store.db["sessions"].count == runs  # no orphan, no duplicate session
        for sid in sids:
            seqs = [e.seq for e in store.events(sid)]
            assert seqs == list(range(1, len(seqs) + 1)), sid  # whole, no gap, no repeat
            kinds = [e.kind for e in store.events(sid)]
            assert kinds[0] == "session_started" and kinds[-1] == "session_ended"
            assert store.session(sid)["status"] == "finished"
            # the landed session points at this machine's files, not the worker's
            started = store.events(sid, kinds=["session_started"])[0].payload
            assert started.workspace == str(home / "workspaces" / sid)
            assert (home / "workspaces" / sid / "slow.py").is_file()
        return rows
    finally:
        store.close()


def test_bench_on_two_nodes_interrupt_resume_replay_fork(tmp_path: Path, cluster: LocalCluster):
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "good.jsonl", responses(1.0))
    model = f"replay:{replay}"
    args = ["--task-dir", str(TINY), "--models", model, "--runs", "3", "--agent", "research"]
    proc = bench_cmd(home, *args, "--ray", cluster.address, "--json")
    # Ctrl-C once the first run has landed: the others are cancelled, the bench resumable
    deadline = time.monotonic() + 180
    store = None
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        if (home / "mlagent.db").exists():
            store = store or Store(home / "mlagent.db")
            if store.db["sessions"].count >= 1:
                break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    rc, _, err = finish(proc)
    assert rc == 130, err
    bench_id = err.split("bench --resume ")[-1].split()[0]
    landed = store.db["sessions"].count
    assert 1 <= landed < 3 and len(bench_sessions(store, bench_id)) == landed
    assert store.db["bench_runs"].get(bench_id)["status"] == "interrupted"
    store.close()

    rc, out, err = finish(bench_cmd(home, "--resume", bench_id, "--ray", cluster.address, "--json"))
    assert rc == 0, err
    report = json.loads(out)
    assert report["status"] == "finished" and len(report["runs"]) == 3
    assert {r["status"] for r in report["runs"]} == {"finished"}
    nodes = {r["node"] for r in report["runs"]}
    assert len(nodes) == 2, report["runs"]  # the runs landed on both nodes
    # both nodes passed the self-test (a node left out says why)
    assert report["scale"]["nodes"] == 2 and report["scale"]["nodes_used"] == 2, report["scale"]
    assert report["scale"]["retries"] == 0 and report["scale"]["lost_nodes"] == 0
    assert report["results"][0]["success_rate"] == 1.0
    rows = check_each_once(home, bench_id, 3)

    # `sessions show` and replay read a run that ran elsewhere like a local one
    sid = rows[0]["session_id"]
    show = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "sessions", "show", sid, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home)},
        cwd=ROOT,
        timeout=120,
    )
    assert show.returncode == 0, show.stderr
    assert [s["action"] for s in json.loads(show.stdout)["steps"]][:2] == [
        "Write File",
        "Execute Script",
    ]
    from mlagent_tui.core.home import Home
    from mlagent_tui.tui.app import MlagentApp
    from mlagent_tui.tui.screens.session import SessionScreen

    h = Home.at(home)
    store = Store(h.db_path)
    try:

        async def replay_it() -> None:
            app = MlagentApp(h, store, replay_id=sid)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                screen = app.screen
                assert isinstance(screen, SessionScreen) and screen.replay
                assert screen.view.state == "finished" and screen.selected == 4
                await pilot.press("home", "right")
                assert screen.view.steps[1].action == "Write File"
                await pilot.press("q")

        asyncio.run(replay_it())

        # fork from step 1 (the script written): the fork runs here, from the landed snapshot
        child = Session.fork(h, store, sid, 1)
        result = child.run()
        assert result.valid and result.final_score == pytest.approx(0.5)
        assert store.session(child.id)["parent_session_id"] == sid
    finally:
        store.close()


def test_a_node_killed_mid_bench_has_its_run_retried(tmp_path: Path, cluster: LocalCluster):
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "slow.jsonl", responses(3))
    second = cluster.nodes[1]
    raylet = cluster.raylet(second)
    args = ["--task-dir", str(TINY), "--models", f"replay:{replay}", "--runs", "2"]
    proc = bench_cmd(home, *args, "--ray", cluster.address, "--json")
    # wait until a run's script executes under the second node's raylet, then kill that raylet
    deadline = time.monotonic() + 180
    while not any("slow.py" in cmdline(p) for p in descendants(raylet)):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no run reached the second node"
        time.sleep(0.2)
    os.kill(raylet, signal.SIGKILL)
    rc, out, err = finish(proc)
    assert rc == 0, err
    report = json.loads(out)
    assert report["scale"]["retries"] >= 1 and report["scale"]["lost_nodes"] == 1, err
    assert {r["status"] for r in report["runs"]} == {"finished"}
    nodes = {r["node"] for r in report["runs"]}
    assert len(nodes) == 1 and report["scale"]["lost"][0] not in nodes  # all on the survivor
    check_each_once(home, report["bench_id"], 2)


def test_ray_without_the_extra_says_how_to_install(tmp_path: Path):
    """Where `import ray` fails, --ray is one line naming the extra, and no bench is made."""
    fake = tmp_path / "noray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    replay = write_replay(tmp_path / "r.jsonl", responses(0))
    env = {
        **os.environ,
        "PYTHONPATH": f"{fake.parent}{os.pathsep}{ROOT}",
        "MLAGENT_HOME": str(tmp_path / "home"),
    }
    args = ["--task-dir", str(TINY), "--models", f"replay:{replay}", "--ray", "local"]
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "bench", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode != 0 and "pip install 'mlagent[scale]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    store = Store(tmp_path / "home" / "mlagent.db")
    assert store.db["bench_runs"].count == 0
    store.close()


def test_trainer_rollouts_run_on_the_nodes_and_the_policy_stays_here(
    tmp_path: Path, cluster: LocalCluster, home, store, tiny_task, monkeypatch
):
    """Sampled solutions (fresh and an improve fork) and whole sessions whose model calls
    come back to this process: every rollout lands in this store once, with its outcome."""
    for name, value in FAST_HEALTH.items():  # this process is the driver here
        monkeypatch.setenv(name, value)
    try:
        _rollouts(tmp_path, cluster, home, store, tiny_task)
    finally:
        from trainer.remote import disconnect

        disconnect()


def _rollouts(tmp_path: Path, cluster: LocalCluster, home, store, tiny_task) -> None:
    from mlagent_tui.core.llm.base import Completion
    from mlagent_tui.core.llm.replay import ReplayModel
    from mlagent_tui.core.tasks import find_task
    from trainer.remote import solution_sessions, solve_sessions

    from .train_helpers import gold_script, solve_text

    task = find_task(task_dir=tiny_task)
    gold = solve_text(gold_script(tiny_task))
    done = [Completion(text=gold, token_ids=[1, 2], logprobs=[-0.5, -0.5])] * 2
    name = "policy:local@run-x/update-0001"
    outcomes = solution_sessions(cluster.address, home, store, task, done, model_name=name)
    assert [o.valid for o in outcomes] == [True, True]
    assert outcomes[0].steps[0].logprobs == [-0.5, -0.5]
    (again,) = solution_sessions(
        cluster.address,
        home,
        store,
        task,
        done[:1],
        model_name=name,
        parent=(outcomes[0].session_id, 1),
    )
    assert [s.step for s in again.steps] == [2] and again.steps[0].valid
    assert store.session(again.session_id)["parent_session_id"] == outcomes[0].session_id

    policy = ReplayModel(write_replay(tmp_path / "policy.jsonl", [gold] * 4))
    whole = solve_sessions(cluster.address, home, store, task, policy, 2, max_steps=2)
    assert [len(o.steps) for o in whole] == [2, 2] and all(o.valid for o in whole)
    assert policy.position == 4  # every model call was answered here, by this process's model
    sids = [o.session_id for o in [*outcomes, again, *whole]]
    assert len(set(sids)) == 5 and store.db["sessions"].count == 5
    for sid in sids:
        seqs = [e.seq for e in store.events(sid)]
        assert seqs == list(range(1, len(seqs) + 1))
        assert store.events(sid)[-1].kind == "session_ended"


def test_a_half_run_session_travels_resumes_elsewhere_and_lands_once(tmp_path: Path, home, store):
    """The bundle path without a cluster (the task body is a plain function): a session
    interrupted here continues in another home from its events and snapshots, and comes back
    as only what it added; landing it again adds nothing."""
    from mlagent_tui.core.scale import (
        Relocation,
        RemoteRun,
        export_session,
        land_session,
        pack_folder,
        run_remote,
    )
    from mlagent_tui.core.session import SessionConfig

    replay = write_replay(tmp_path / "r.jsonl", responses(0))
    model = f"replay:{replay}"
    session = Session.create(home, store, SessionConfig(task_dir=str(TINY), model=model))
    # stopped after its first step (Write File), as a Ctrl-C of a local bench leaves it
    session.subscribe(
        lambda e: session.stop("bench interrupted") if e.kind == "action_finished" else None
    )
    assert session.run().reason == "bench interrupted"
    before = len(store.events(session.id))

    run = RemoteRun(
        task="tiny-task",
        model=model,
        replay=replay.read_bytes(),
        config={},
        resume=export_session(home, store, session.id),
    )
    result = run_remote(run, pack_folder(TINY))
    assert result.error is None and result.bundle is not None
    assert result.model != model  # the worker read its own copy of the replay file
    first = result.bundle.parsed()[0]
    assert first.seq == before + 1  # only what the resume added travels back
    where = Relocation(task_folder=str(TINY), model=model, replaces_model=result.model)
    assert land_session(home, store, result.bundle, where) > 0
    assert land_session(home, store, result.bundle, where) == 0  # never twice
    seqs = [e.seq for e in store.events(session.id)]
    assert seqs == list(range(1, len(seqs) + 1))
    row = store.session(session.id)
    assert row["status"] == "finished" and row["final_score"] == pytest.approx(0.5)
    assert row["model"] == model and row["workspace"] == str(home.workspace(session.id))
    assert (home.workspace(session.id) / "submission.csv").is_file()
    child = Session.fork(home, store, session.id, 2)  # forks from the landed snapshots
    assert child.run().final_score == pytest.approx(0.5)


def test_a_node_that_fails_the_sandbox_self_test_gets_no_run(tmp_path: Path):
    """A second node whose bubblewrap is broken (the first `bwrap` on its PATH fails, so
    nothing runs there, isolated or not): its self-test fails, it is left out with the reason
    in the report, and every run goes to the head."""
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    (broken / "bwrap").write_text("#!/bin/sh\necho 'bwrap: broken on this node' >&2\nexit 1\n")
    (broken / "bwrap").chmod(0o755)
    c = LocalCluster(cwd=ROOT)
    try:
        c.start(head=True)
        c.start(env={"PATH": f"{broken}{os.pathsep}{os.environ['PATH']}"})
        replay = write_replay(tmp_path / "r.jsonl", responses(0))
        args = ["--task-dir", str(TINY), "--models", f"replay:{replay}", "--runs", "2"]
        rc, out, err = finish(bench_cmd(tmp_path / "home", *args, "--ray", c.address, "--json"))
    finally:
        c.stop()
    assert rc == 0, err
    report = json.loads(out)
    scale = report["scale"]
    assert scale["nodes"] == 2 and scale["nodes_used"] == 1, scale
    ((left_out, why),) = scale["excluded"].items()
    assert "self-test" in why and "left out" in err
    assert left_out not in {r["node"] for r in report["runs"]}
    assert {r["status"] for r in report["runs"]} == {"finished"}
