"""Rollouts as Ray tasks (`mlagent-train run --ray ADDRESS`): the executions go out, the policy
stays here.

A sampled solution is run on a node as its own one-step solve session (forked there from the
parent session, which travels with it, for an improve prompt); a whole trajectory session runs
on a node too, but each of its model calls comes back to this process through a small Ray actor
(`PolicyGateway`): the policy, its weights and its updates never leave the driver. Every
rollout session lands whole in the driver's store (core.scale), so `mlagent replay` shows it as
it does a local one. Nodes run the sandbox self-test once per process, and a failing node gets
no rollout; a rollout whose worker dies runs once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mlagent_tui.core.home import Home
from mlagent_tui.core.llm import ChatModel, Completion, Message, TokenCallback
from mlagent_tui.core.scale import (
    Relocation,
    ScaleError,
    SessionBundle,
    connect,
    export_session,
    land_session,
    pack_folder,
    probe_nodes,
    unpack_folder,
)
from mlagent_tui.core.scale.worker import node_id
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task, find_task

from . import rollout
from .rollout import LockedModel, SessionOutcome

RETRIES = 1


class Rollout(BaseModel):
    """One rollout session to run on a node."""

    kind: str  # "solution" | "session"
    task: str
    model_name: str
    completion: Completion | None = None  # solution: the policy's sampled answer
    parent: SessionBundle | None = None  # solution: the session an improve prompt forks
    parent_step: int = 0
    options: dict[str, Any] = {}  # max_steps, max_minutes, seed, exec_timeout_s, instrument


class RolloutResult(BaseModel):
    node: str
    outcome: Any = None  # trainer.rollout.SessionOutcome (read on the node, from its store)
    bundle: SessionBundle | None = None
    error: str | None = None


# -- the driver's side ------------------------------------------------------------------------
class _Cluster:
    """This process's connection: the nodes that passed the self-test, the task folders sent."""

    def __init__(self, address: str) -> None:
        with contextlib.redirect_stdout(sys.stderr):
            self.ray = connect(address)
            nodes = probe_nodes(self.ray, "local")
        self.excluded = sorted(n.node_id for n in nodes if not n.ok)
        if len(self.excluded) == len(nodes):
            raise ScaleError("no Ray node passed the sandbox self-test")
        self.folders: dict[str, Any] = {}

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if self.excluded:
            opts["label_selector"] = {"ray.io/node-id": f"!in({', '.join(self.excluded)})"}
        return opts

    def folder(self, task: Task) -> Any:
        key = str(task.folder)
        if key not in self.folders:
            self.folders[key] = self.ray.put(pack_folder(task.folder))
        return self.folders[key]


_CLUSTERS: dict[str, _Cluster] = {}


def disconnect() -> None:
    """Leave the cluster (tests, and a process that trains against another one next)."""
    for c in _CLUSTERS.values():
        c.ray.shutdown()
    _CLUSTERS.clear()


def cluster(address: str) -> _Cluster:
    if address not in _CLUSTERS:
        _CLUSTERS[address] = _Cluster(address)
    return _CLUSTERS[address]


def run_rollouts(
    address: str,
    home: Home,
    store: Store,
    task: Task,
    rollouts: Sequence[Rollout],
    model: ChatModel | None = None,
) -> list[Any]:
    """Run each rollout as a Ray task, land its session here, return the SessionOutcomes in
    order. With `model`, sessions ask it through a gateway actor served from this process."""
    c = cluster(address)
    ray = c.ray
    remote = ray.remote(_run_rollout)
    gateway = serve = None
    if model is not None:
        gateway = ray.remote(PolicyGateway).options(num_cpus=0).remote()
        serve = _Server(ray, gateway, model)
        serve.start()
    try:
        refs: dict[Any, tuple[int, int]] = {}

        def submit(i: int, attempt: int) -> None:
            ref = remote.options(**c.options()).remote(rollouts[i], c.folder(task), gateway)
            refs[ref] = (i, attempt)

        for i in range(len(rollouts)):
            submit(i, 0)
        outcomes: list[Any] = [None] * len(rollouts)
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
            for ref in done:
                i, attempt = refs.pop(ref)
                try:
                    result: RolloutResult = ray.get(ref)
                except ray.exceptions.RayTaskError:
                    raise
                except ray.exceptions.RayError as exc:  # its worker or node died
                    if attempt >= RETRIES:
                        raise ScaleError(f"a rollout lost its worker twice: {exc}") from None
                    submit(i, attempt + 1)
                    continue
                if result.error is not None or result.bundle is None:
                    raise ScaleError(f"a rollout failed on node {result.node}: {result.error}")
                land_session(home, store, result.bundle, Relocation(task_folder=str(task.folder)))
                outcomes[i] = result.outcome
        return outcomes
    finally:
        if serve is not None:
            serve.stop()
            ray.kill(gateway)


class _Server(threading.Thread):
    """Answers the gateway's model calls with the driver's policy, one at a time."""

    def __init__(self, ray: Any, gateway: Any, model: ChatModel) -> None:
        super().__init__(daemon=True, name="policy-gateway")
        self.ray, self.gateway, self.model = ray, gateway, model
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            request = self.ray.get(self.gateway.next.remote(0.5))
            if request is None:
                continue
            call, messages, kwargs = request
            try:
                answer: Any = self.model.complete(messages, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the session on the node gets the error
                answer = exc
            self.ray.get(self.gateway.answer.remote(call, answer))

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=5)


class PolicyGateway:
    """A Ray actor between sessions on the nodes and the policy in the driver: `ask` waits
    until the driver has `answer`ed what it took with `next`."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        self.waiting: dict[int, asyncio.Future] = {}
        self.calls = 0

    async def ask(self, messages: list[Message], kwargs: dict[str, Any]) -> Any:
        self.calls += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.calls] = future
        await self.queue.put((self.calls, messages, kwargs))
        return await future

    async def next(self, timeout_s: float) -> Any:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout_s)
        except TimeoutError:
            return None

    async def answer(self, call: int, answer: Any) -> None:
        future = self.waiting.pop(call, None)
        if future is not None and not future.done():
            future.set_result(answer)


class GatewayModel:
    """The policy as a session on a node sees it: each call goes to the driver and back."""

    supports_grammar = False

    def __init__(self, gateway: Any, name: str) -> None:
        self.gateway, self.name = gateway, name

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        import ray

        kwargs = {"grammar": grammar, "max_tokens": max_tokens, "temperature": temperature}
        answer = ray.get(self.gateway.ask.remote(messages, kwargs))
        if isinstance(answer, Exception):
            raise answer
        return answer


# -- the node's side ----------------------------------------------------------------------------
def _run_rollout(r: Rollout, task_files: dict[str, bytes], gateway: Any) -> RolloutResult:
    """On a node: the rollout's session in a private temporary home, its outcome read there."""

    root = Path(tempfile.mkdtemp(prefix="mlagent-rollout-"))
    result = RolloutResult(node=node_id())
    try:
        home = Home.at(root / "home")
        task_dir = root / "task" / r.task
        unpack_folder(task_files, task_dir)
        task = find_task(task_dir=task_dir)
        store = Store(home.db_path)
        try:
            o = r.options
            make: Callable[[], Any]
            if r.kind == "solution":
                assert r.completion is not None
                model = rollout.FixedResponse(r.model_name, r.completion)
                parent = None
                if r.parent is not None:
                    land_session(home, store, r.parent, Relocation(task_folder=str(task_dir)))
                    parent = (r.parent.session_id, r.parent_step)

                def make() -> Any:
                    return rollout.solution_session(
                        home, store, task, model, parent, o.get("exec_timeout_s"), o["seed"]
                    )
            else:

                def make() -> Any:
                    return rollout.new_session(
                        home,
                        store,
                        task,
                        GatewayModel(gateway, r.model_name),
                        exec_timeout_s=o.get("exec_timeout_s"),
                        agent="solve",
                        max_steps=o["max_steps"],
                        max_minutes=o.get("max_minutes"),
                        seed=o["seed"],
                    )

            result.outcome = rollout.run_session(
                make, store, task, o.get("instrument", "structure")
            )
            result.bundle = export_session(home, store, result.outcome.session_id)
        finally:
            store.close()
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result


# -- what the recipes call ---------------------------------------------------------------------
def solution_sessions(
    address: str,
    home: Home,
    store: Store,
    task: Task,
    completions: Sequence[Completion],
    *,
    model_name: str,
    parent: tuple[str, int] | None = None,
    exec_timeout_s: float | None = None,
    seed: int = 0,
    instrument: str = "structure",
    **_local: Any,  # workers: Ray decides how many run at once
) -> list[SessionOutcome]:
    """trainer.rollout.solution_sessions with each session a Ray task; the parent session an
    improve prompt forks travels with each."""
    opts = {"exec_timeout_s": exec_timeout_s, "seed": seed, "instrument": instrument}
    up = export_session(home, store, parent[0]) if parent else None
    rollouts = [
        Rollout(kind="solution", task=task.name, model_name=model_name, completion=c,
                parent=up, parent_step=parent[1] if parent else 0, options=opts)
        for c in completions
    ]  # fmt: skip
    return run_rollouts(address, home, store, task, rollouts)


def solve_sessions(
    address: str,
    home: Home,
    store: Store,
    task: Task,
    model: ChatModel,
    count: int,
    *,
    max_steps: int,
    max_minutes: float | None = None,
    exec_timeout_s: float | None = None,
    seed: int = 0,
    instrument: str = "structure",
    **_local: Any,
) -> list[SessionOutcome]:
    """trainer.rollout.solve_sessions with each session a Ray task; `model` answers from here."""
    opts = {"max_steps": max_steps, "max_minutes": max_minutes, "seed": seed,
            "exec_timeout_s": exec_timeout_s, "instrument": instrument}  # fmt: skip
    one = Rollout(kind="session", task=task.name, model_name=model.name, options=opts)
    return run_rollouts(address, home, store, task, [one] * count, model=LockedModel(model))


def solution_sessions_on(address: str | None) -> Callable[..., list[SessionOutcome]]:
    """trainer.rollout.solution_sessions, or the same on the Ray cluster at `address`."""
    if address is None:
        return rollout.solution_sessions
    return functools.partial(solution_sessions, address)


def solve_sessions_on(address: str | None) -> Callable[..., list[SessionOutcome]]:
    """trainer.rollout.solve_sessions, or the same on the Ray cluster at `address`."""
    if address is None:
        return rollout.solve_sessions
    return functools.partial(solve_sessions, address)
