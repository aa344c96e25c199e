"""A bench whose runs are Ray tasks on a cluster (`mlagent bench --ray ADDRESS`).

The same bench as runner.py (same pending runs, same rows, same report) with Ray doing the
distribution: every node first runs the sandbox self-test and a failing node is left out; each
run is one task (core.scale.worker) that returns its session whole, and this driver lands it in
its own store. A task whose worker or node dies is retried once away from the nodes lost so far;
a run never lands twice (a retry is a new session, and only a returned one lands). Ctrl-C
stops the bench between Ray calls and drops the tasks in flight (the driver's disconnect ends
them): nothing of theirs reached the store, so `--resume` runs them again.
"""

from __future__ import annotations

import contextlib
import io
import re
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, Field

from ..home import Home
from ..llm import ModelSpec
from ..scale import (
    NodeProbe,
    Relocation,
    RemoteResult,
    RemoteRun,
    ScaleError,
    connect,
    export_session,
    land_session,
    live_nodes,
    pack_folder,
    probe_nodes,
    run_remote,
)
from ..store import Store, record_run, set_bench_scale, set_bench_status
from .runner import (
    INTERRUPTED,
    BenchConfig,
    BenchError,
    BenchRunner,
    RunCallback,
    RunJob,
    run_key,
)

RETRIES = 1  # a run whose worker died runs once more, elsewhere


class ScaleAccount(BaseModel):
    """What the cluster did for a bench: shown in the report, kept with the bench."""

    address: str
    nodes: list[NodeProbe] = Field(default_factory=list)
    excluded: dict[str, str] = Field(default_factory=dict, description="node id -> reason")
    lost: list[str] = Field(default_factory=list, description="nodes that died mid-bench")
    retries: int = 0


class RayBenchRunner(BenchRunner):
    """Runs the missing runs of one bench as Ray tasks; `stop()` drops those in flight."""

    def __init__(
        self,
        home: Home,
        store: Store,
        bench_id: str,
        config: BenchConfig,
        address: str,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(home, store, bench_id, config)
        self.address = address
        self.note = on_note or (lambda _msg: None)
        self.account = ScaleAccount(address=address)
        self._inflight: dict[Any, tuple[RunJob, int]] = {}

    # -- what travels ------------------------------------------------------------------------
    def _replay_files(self) -> dict[str, bytes]:
        """A replay model's responses travel with its runs (the file is only on this machine)."""
        files = {}
        for m in self.config.models:
            spec = ModelSpec.parse(m)
            if spec.backend == "replay" and spec.target:
                files[m] = Path(spec.target).read_bytes()
        return files

    def _remote_run(self, job: RunJob, replay: dict[str, bytes]) -> RemoteRun:
        c = self.config
        resume = None
        if job.resume_session:
            resume = export_session(self.home, self.store, job.resume_session)
        return RemoteRun(
            task=job.task,
            model=job.model,
            replay=replay.get(job.model),
            config={
                "agent": job.agent,
                "sandbox": c.sandbox,
                "max_steps": c.max_steps,
                "max_minutes": c.max_minutes,
                "seed": c.seed,
            },
            resume=resume,
        )

    # -- running -----------------------------------------------------------------------------
    def run(self, on_run: RunCallback | None = None) -> str:
        caught: list[int] = []
        # Ray prints cluster news (a raylet died ...) on stdout; stdout is our --json's
        with contextlib.redirect_stdout(_FirstLines(sys.stderr)):
            ray = connect(self.address)
            try:
                with self._signals_stop(caught):
                    status = self._run(ray, on_run)
            finally:
                ray.shutdown()  # disconnects this driver: Ray ends the tasks it still ran
        if caught:  # now that Ray is gone, the signal does what it would have done
            signal.raise_signal(caught[0])
        return status

    @contextlib.contextmanager
    def _signals_stop(self, caught: list[int]) -> Iterator[None]:
        """Ctrl-C and SIGTERM stop the loop between Ray calls instead of raising inside one: an
        interrupted or cancelled call lets a task's late reply meet a table that no longer
        holds the task, and Ray aborts this driver ("Tried to complete task that was not
        pending") before the bench is marked resumable. Main thread only (elsewhere: no-op)."""

        def stop(signum: int, _frame: Any) -> None:
            caught.append(signum)
            self.stop()

        wanted = [
            s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) != signal.SIG_IGN
        ]
        try:
            previous = {s: signal.signal(s, stop) for s in wanted}
        except ValueError:  # not the main thread: whoever runs us calls stop()
            yield
            return
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _probe(self, ray: Any) -> list[str]:
        self.note("probing every node's sandbox (self-test) ...")
        self.account.nodes = probe_nodes(ray, self.config.sandbox)
        self.account.excluded = {n.node_id: n.reason for n in self.account.nodes if not n.ok}
        for node_id, reason in self.account.excluded.items():
            self.note(f"node {node_id[:12]} left out: {reason}")
        good = [n.node_id for n in self.account.nodes if n.ok]
        self.note(f"{len(good)} of {len(self.account.nodes)} node(s) passed the self-test")
        return good

    def _run(self, ray: Any, on_run: RunCallback | None) -> str:
        jobs = self.pending()
        set_bench_status(self.store, self.bench_id, "running")
        good = self._probe(ray)
        self._save_account()
        if self._stopping.is_set():  # stopped while the nodes were probed: nothing submitted
            set_bench_status(self.store, self.bench_id, "interrupted")
            return "interrupted"
        if not good:
            set_bench_status(self.store, self.bench_id, "interrupted")
            raise ScaleError("no node passed the sandbox self-test; see the reasons above")
        tasks = {t.name: ray.put(pack_folder(Path(t.task_dir or ""))) for t in self.config.tasks}
        replay = self._replay_files()
        remote = ray.remote(run_remote)
        alive = set(live_nodes(ray))

        def submit(job: RunJob, attempt: int) -> None:
            avoid = sorted(set(self.account.excluded) | set(self.account.lost))
            options: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
            if avoid:
                options["label_selector"] = {"ray.io/node-id": f"!in({', '.join(avoid)})"}
            ref = remote.options(**options).remote(self._remote_run(job, replay), tasks[job.task])
            self._inflight[ref] = (job, attempt)
            if on_run:
                on_run(job, "running", job.resume_session)

        try:
            for job in jobs:
                submit(job, 0)
            while self._inflight:
                if self._stopping.is_set():
                    self._drop_in_flight()
                    break
                done, _ = ray.wait(list(self._inflight), num_returns=1, timeout=0.5)
                for ref in done:
                    job, attempt = self._inflight.pop(ref)
                    try:
                        result: RemoteResult = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:  # our code raised on the worker
                        self._record(job, attempt, None, f"{type(exc).__name__}: {exc}", on_run)
                        continue
                    except ray.exceptions.RayError as exc:  # the worker or its node died
                        alive = self._count_lost(ray, alive, _dead_node(exc))
                        if attempt < RETRIES:
                            self.account.retries += 1
                            why = str(exc).split(". ")[0][:200]
                            self.note(f"{job.task} #{job.run_index}: retrying elsewhere ({why})")
                            self._save_account()
                            submit(job, attempt + 1)
                        else:
                            error = f"lost its worker twice: {str(exc).splitlines()[0][:300]}"
                            self._record(job, attempt, None, error, on_run)
                        continue
                    self._record(job, attempt, result, result.error, on_run)
        except KeyboardInterrupt:
            self._drop_in_flight()
            raise
        finally:
            self._count_lost(ray, alive)
            self._save_account()
        status = "interrupted" if self._stopping.is_set() else "finished"
        set_bench_status(self.store, self.bench_id, status)
        return status

    def _count_lost(self, ray: Any, alive: set[str], dead: str | None = None) -> set[str]:
        """Nodes alive at the start (or last look) and dead now are lost, and the one an error
        named (its death may not have reached the cluster's table yet); returns those alive."""
        now = set(live_nodes(ray)) - {dead}
        for node in sorted(alive - now):
            if node not in self.account.lost:
                self.account.lost.append(node)
                self.note(f"node {node[:12]} lost")
        return now

    def _record(
        self,
        job: RunJob,
        attempt: int,
        result: RemoteResult | None,
        error: str | None,
        on_run: RunCallback | None,
    ) -> None:
        """Land a returned session (whole, once) and write the run's row."""
        key = run_key(self.bench_id, job)
        sid = None
        status = "crashed" if error else "done"
        if result is not None and result.bundle is not None:
            sid = result.bundle.session_id
            where = Relocation(
                task_folder=self.folders[job.task] or "",
                model=job.model,
                replaces_model=result.model,
            )
            try:
                land_session(self.home, self.store, result.bundle, where)
            except Exception as exc:  # noqa: BLE001 - a bundle that cannot land is a crashed run
                status, error, sid = "crashed", f"landing failed: {exc}", None
            if status == "done" and result.reason == INTERRUPTED:
                status = "interrupted"
        record_run(
            self.store,
            *key,
            status=status,
            session_id=sid,
            error=error,
            run_wall_s=result.wall_s if result else None,
            node=result.node if result else None,
            attempts=attempt + 1,
            agent=job.agent,
        )
        if on_run:
            on_run(job, status, sid)

    def _drop_in_flight(self) -> None:
        """Stop: drop the tasks in flight (none of them landed) and leave the bench resumable.
        No `ray.cancel`: a task that finished as it was cancelled sends a reply Ray no longer
        expects, and Ray aborts this driver; the driver's disconnect ends them instead."""
        self._stopping.set()
        self._inflight.clear()
        set_bench_status(self.store, self.bench_id, "interrupted")

    def stop(self) -> None:
        self._stopping.set()

    def _save_account(self) -> None:
        set_bench_scale(self.store, self.bench_id, self.account.model_dump())


class _FirstLines(io.TextIOBase):
    """What Ray prints for the driver, one line per message: a raylet's death comes with
    hundreds of lines of its log, which stay in the node's own log files."""

    def __init__(self, sink: TextIO) -> None:
        self.sink = sink

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = text.strip().splitlines()
        if lines:
            self.sink.write(lines[0][:400] + "\n")
            self.sink.flush()
        return len(text)


def _dead_node(exc: Exception) -> str | None:
    """The node id a NodeDiedError names (Ray gives it only in the message)."""
    found = re.search(r"node ID: ([0-9a-f]{56})", str(exc))
    return found.group(1) if found else None


def check_ray_options(address: str | None) -> None:
    """`--ray` without Ray installed fails before the bench is created."""
    if address is None:
        return
    from ..scale import import_ray

    try:
        import_ray()
    except ScaleError as exc:
        raise BenchError(str(exc)) from None
