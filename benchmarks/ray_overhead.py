"""Scale-out figures (`mlagent bench --ray`), on a Ray cluster of one-CPU nodes on this machine.

1. Overhead per run on Ray vs the in-process pool (target <= 0.5 s): the same 20 short replay
   runs with `--parallel 2` in this process, then as Ray tasks on two one-CPU nodes (two at a
   time as well); (Ray wall - pool wall) x 2 / 20. The nodes' sandbox self-test, once per bench
   and not per run, is timed apart.
2. Two one-CPU nodes vs one (target >= 1.7x): runs whose execution is a CPU-bound script (a
   fixed amount of work) on the head alone, then with a second node joined.
3. The driver's store: events appended per second when sessions land (one transaction per
   session, as `land_session` does), against the rate one run in flight produces; their ratio
   is how many runs in flight one head's SQLite store carries.

The machine may be shared (and its two cores are both nodes here): the figures say what they
measured; read a loaded machine's speed-up as a floor.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_harness import TINY, replay_file, research  # the same replay scaffolding

from mlagent_tui.core.bench import (
    BenchRunner,
    RayBenchRunner,
    collect_outcomes,
    make_config,
    resolve_tasks,
    start_bench,
)
from mlagent_tui.core.home import Home
from mlagent_tui.core.scale import Relocation, SessionBundle, export_session, land_session
from mlagent_tui.core.scale.local_cluster import LocalCluster
from mlagent_tui.core.store import Store, bench_sessions

ROOT = Path(__file__).resolve().parents[1]
CPU_WORK = "s = 0\nfor i in range({n}):\n    s += i * i\nprint(s)\n"


class Timed:
    """Notes from the Ray runner, timed: when the probes started and ended."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}

    def __call__(self, msg: str) -> None:
        if msg.startswith("probing"):
            self.marks["probe_start"] = time.perf_counter()
        elif "passed the self-test" in msg:
            self.marks["probe_end"] = time.perf_counter()

    @property
    def probe_s(self) -> float:
        return self.marks.get("probe_end", 0.0) - self.marks.get("probe_start", 0.0)


def bench(
    root: Path, model: str, runs: int, *, parallel: int = 2, ray: str | None = None
) -> tuple[float, float, Home, Store, str]:
    """(wall seconds without the probes, probe seconds, home, store, bench id)."""
    home = Home.at(root / f"home-{time.monotonic_ns()}")
    store = Store(home.db_path)
    config = make_config(resolve_tasks([], [TINY]), [model], runs=runs, parallel=parallel)
    bench_id = start_bench(home, store, config)
    timed = Timed()
    runner = (
        RayBenchRunner(home, store, bench_id, config, ray, on_note=timed)
        if ray
        else BenchRunner(home, store, bench_id, config)
    )
    started = time.perf_counter()
    runner.run()
    wall = time.perf_counter() - started - timed.probe_s
    rows = bench_sessions(store, bench_id)
    bad = [r for r in rows if r["status"] != "done"]
    if bad or len(rows) != runs:
        raise SystemExit(f"runs did not all finish: {bad or rows}")
    return wall, timed.probe_s, home, store, bench_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cpu-runs", type=int, default=6)
    parser.add_argument("--work", type=int, default=30_000_000, help="loop steps per CPU run")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mlagent-ray-bench-"))
    quick = replay_file(
        root,
        "quick.jsonl",
        [
            research("Execute Script", {"script_name": "train.py"}),
            research("Validate", {}),
            research("Final Answer", {"final_answer": "baseline"}),
        ],
    )
    cpu = replay_file(
        root,
        "cpu.jsonl",
        [
            research(
                "Write File", {"file_name": "work.py", "content": CPU_WORK.format(n=args.work)}
            ),
            research("Execute Script", {"script_name": "work.py"}),
            research("Final Answer", {"final_answer": "done"}),
        ],
    )
    cluster = LocalCluster(cwd=ROOT)
    try:
        t = time.perf_counter()
        cluster.start(head=True)
        head_s = time.perf_counter() - t

        # 2. one node, then two (CPU-bound executions)
        one, probe1, h1, s1, b1 = bench(root, cpu, args.cpu_runs, ray=cluster.address)
        t = time.perf_counter()
        cluster.start()
        node_s = time.perf_counter() - t
        two, probe2, h2, s2, b2 = bench(root, cpu, args.cpu_runs, ray=cluster.address)
        # the control: what this machine gives two processes at once right now, without Ray
        ctl1, *_ = bench(root, cpu, args.cpu_runs, parallel=1)
        ctl2, *_ = bench(root, cpu, args.cpu_runs, parallel=2)

        # 1. overhead per run: the in-process pool, then Ray, two at a time each
        pool, _, *_ = bench(root, quick, args.runs, parallel=2)
        on_ray, probe, home, store, bench_id = bench(root, quick, args.runs, ray=cluster.address)
    finally:
        cluster.stop()

    # 3. the driver's store: land every session of the Ray bench again, in a fresh home
    bundles: list[SessionBundle] = [
        export_session(home, store, r["session_id"]) for r in bench_sessions(store, bench_id)
    ]
    events = sum(len(b.events) for b in bundles)
    target = Home.at(root / "landing")
    landing = Store(target.db_path)
    t = time.perf_counter()
    for b in bundles:
        land_session(target, landing, b, Relocation(task_folder=str(TINY)))
    land_s = time.perf_counter() - t
    raw = Home.at(root / "raw")
    raw_store = Store(raw.db_path)
    parsed = [b.parsed() for b in bundles]
    t = time.perf_counter()
    for evs in parsed:
        raw_store.append_many(evs)
    append_s = time.perf_counter() - t
    outcomes = collect_outcomes(store, bench_id, _config(store, bench_id))
    run_s = sum(o.wall_seconds for o in outcomes) / len(outcomes)
    per_run_rate = events / len(bundles) / run_s

    print("Ray scale-out figures (machine shared and contended: 2 cores, other jobs running;")
    print("both one-CPU nodes are on this one machine; run with nice -n 19)")
    print(f"  ray start: head {head_s:.1f} s, second node {node_s:.1f} s")
    print(f"  sandbox self-test before a bench: {probe1:.1f} s (1 node), {probe:.1f} s (2 nodes)")
    per_run = (on_ray - pool) * 2 / args.runs
    print(
        f"1. {args.runs} replay runs, 2 at a time: in-process pool {pool:.2f} s, Ray {on_ray:.2f} s"
        f" -> overhead per run {per_run:+.3f} s (target <= 0.5 s)"
    )
    print(
        f"2. {args.cpu_runs} CPU-bound runs: 1 node {one:.2f} s, 2 nodes {two:.2f} s"
        f" -> speed-up {one / two:.2f}x (target >= 1.7x); runs per node "
        f"{_per_node(s1, b1)} then {_per_node(s2, b2)}"
    )
    print(
        f"   control, the in-process pool on this machine now: 1 at a time {ctl1:.2f} s,"
        f" 2 at a time {ctl2:.2f} s -> {ctl1 / ctl2:.2f}x (the most 2 nodes here can give)"
    )
    print(
        f"3. driver store: landing {len(bundles)} sessions ({events} events, files included)"
        f" {events / land_s:,.0f} events/s; bare append_many {events / append_s:,.0f} events/s"
    )
    print(
        f"   one run in flight writes {per_run_rate:.1f} events/s ({events / len(bundles):.0f}"
        f" events in {run_s:.2f} s): the store carries ~{events / land_s / per_run_rate:,.0f}"
        " such runs in flight"
    )


def _per_node(store: Store, bench_id: str) -> list[int]:
    counts: dict[str, int] = {}
    for r in bench_sessions(store, bench_id):
        counts[r["node"]] = counts.get(r["node"], 0) + 1
    return sorted(counts.values(), reverse=True)


def _config(store: Store, bench_id: str):  # noqa: ANN202
    from mlagent_tui.core.bench import load_bench

    return load_bench(store, bench_id)


if __name__ == "__main__":
    main()
