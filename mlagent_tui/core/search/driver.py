"""The search driver: the agent of a `--agent search` session.

One thread chooses (policy) nodes. Where generations can overlap, the workers generate them: an
API model (`concurrent`) takes `workers` requests at once, and the local model gives one
replica per core (`replicas`); up to `workers` generations and runs are then in flight, and
calls in flight count against the step budget so it is never overrun. With one model context (a
replay, one worker, one core) the chooser also generates, one node at a time, so the order of
model calls is deterministic; while scripts run in the sandbox it writes the next. A fresh
search begins with the task's starter script, run as given (no model call): a valid root the
edits improve, whatever the model's drafts. Every choice, node and steering mark is an event;
the tree is folded from those events only. At the end the top nodes by search score are
re-scored on the hidden part, the best there becomes the session's workspace (so grading, submit,
fork and replay work as for any session) and the session ends as usual.
"""

from __future__ import annotations

import queue
import random
import shutil
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from ..agent.tweak import columns_of, pick_tweak
from ..events import Event
from ..llm import ModelError, ModelExhausted
from ..search_events import (
    NodeCreated,
    NodeExpandAsked,
    NodeFinished,
    NodeHint,
    NodePinned,
    NodePruned,
    NodeStarted,
    PolicyChoice,
)
from ..tasks import runnable_starter
from .memory import memory_text
from .node import Tree
from .operators import Proposal, context_of, propose
from .policies import Choice, Settings, expand_choice, make_policy
from .selection import make_split, remove_split, select
from .workers import NodeRunner

MAX_HINT_CHARS = 2_000
# Of improvements, the share asked as one edit where the model takes a grammar (tweak.py: the
# model picks a setting's new value). The shipped model's whole-script improvements ran in 1
# of 6 on breast-cancer (benchmarks/search_vs_linear.py); its tweaks always apply.
GRAMMAR_EDIT_PROB = 0.7
InFlight = dict[Future["NodeFinished | None"], int]  # a node's job -> its id


class SearchDriver:
    """Runs the search of `host` (a Session: its recorder, model, task, budgets, pause/stop)."""

    def __init__(self, host: Any, settings: Settings | None = None) -> None:
        cfg = host.config
        self.host = host
        if settings is None and getattr(host.model, "supports_grammar", False):
            settings = Settings(edit_prob=GRAMMAR_EDIT_PROB)  # a tweak applies; a rewrite rarely
        self.policy = make_policy(cfg.policy, settings)
        self.settings = settings or Settings()
        self.workers = cfg.workers
        self.max_nodes = cfg.max_nodes
        self.tree = Tree(host.task.spec.metric.higher_is_better)
        self.ended = False
        self.concurrent = False  # set by run(): the workers generate (see _models)
        self._pool: queue.Queue[Any] = queue.Queue()
        self._ids = threading.Lock()
        self._reserved = 0  # the highest node id handed out (a generation in flight holds one)
        self._generating = 0  # generations in flight (concurrent models only)
        self._model_end: tuple[str, str] | None = None
        self.columns: list[str] = []  # what an edit of a column list offers (set by run())
        self.tree.apply_all(e.payload for e in host.store.events(host.id))
        self.calls = sum(1 for e in host.store.events(host.id, kinds=["llm_call"]))
        host.bus.subscribe(self._on_event)

    # -- events ------------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        self.tree.apply(event.payload)
        if event.payload.kind == "llm_call":
            self.calls += 1
            self.host.completed = self.calls
            self.host.recorder.step = self.calls

    def _emit(self, payload: Any) -> None:
        self.host.recorder.emit(payload, step=self.calls)

    # -- steering (thread-safe: the TUI calls these from its thread) --------------------------
    def _check(self, node: int) -> None:
        if self.ended:
            raise ValueError("the search has ended")
        with self.tree.lock:
            if node not in self.tree.nodes:
                known = ", ".join(f"#{n}" for n in sorted(self.tree.nodes)) or "none yet"
                raise ValueError(f"no node #{node} in this search (nodes: {known})")

    def expand_next(self, node: int) -> None:
        self._check(node)
        self._emit(NodeExpandAsked(node=node))

    def pin(self, node: int, pinned: bool = True) -> None:
        self._check(node)
        self._emit(NodePinned(node=node, pinned=pinned))

    def prune(self, node: int) -> None:
        self._check(node)
        self._emit(NodePruned(node=node))

    def hint(self, node: int, text: str) -> None:
        self._check(node)
        if not text.strip():
            raise ValueError("an empty hint is not given")
        self._emit(NodeHint(node=node, text=text.strip()[:MAX_HINT_CHARS]))

    # -- choosing ----------------------------------------------------------------------------
    def _choose(self, rng: random.Random) -> Choice:
        with self.tree.lock:
            while self.tree.expand_asked:
                nid = self.tree.expand_asked.pop(0)
                node = self.tree.nodes.get(nid)
                if node is not None and not node.pruned:
                    return expand_choice(self.tree, node, rng, self.settings)
            return self.policy.choose(self.tree, rng)

    def _hints(self, parents: list[int]) -> list[str]:
        hints = list(self.host.state.hints)
        with self.tree.lock:
            for pid in parents:
                for nid in self.tree.lineage(pid):
                    hints.extend(self.tree.nodes[nid].hints)
        return hints

    def _budget(self) -> tuple[str, str] | None:
        reason = self._model_end or self.host.budget_reason()
        if reason:
            return reason
        if (
            self.max_nodes is not None
            and max(len(self.tree.nodes), self._reserved) >= self.max_nodes
        ):
            return "budget", f"node budget of {self.max_nodes} used"
        return None

    # -- running -----------------------------------------------------------------------------
    def _models(self) -> list[Any]:
        """The model contexts generations may use at once (one each)."""
        model = self.host.model
        if self.workers == 1:
            return [model]
        if getattr(model, "concurrent", False):
            return [model] * self.workers
        replicas = getattr(model, "replicas", None)
        if replicas is None:
            return [model]
        try:
            return replicas(self.workers)
        except ModelError:  # no room for another context: generate one at a time
            return [model]

    def run(self) -> None:
        """Search until a budget, a stop or the model ends it; then select and finish."""
        host = self.host
        self.columns = columns_of(host.workspace.root)  # the prepared task's data
        split = make_split(host.task, host.private, host.config.seed)
        nodes_root = host.home.root / "nodes" / host.id
        runner = NodeRunner(
            task=host.task,
            backend=host.config.sandbox,
            base=host.workspace.root,
            nodes_root=nodes_root,
            meta=host.home.snapshots(host.id),
            split=split,
            workers=self.workers,
        )
        rng = random.Random(f"{host.config.seed}:{len(self.tree.nodes)}")
        in_flight: InFlight = {}
        models = self._models()
        self.concurrent = len(models) > 1
        for m in models:
            self._pool.put(m)
        end: tuple[str, str] = ("finished", "search finished")
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="search-node")
        try:
            for node in sorted(n.id for n in self.tree.nodes.values() if not n.done):
                self._start(pool, runner, in_flight, node)  # in flight when it stopped: again
            starter = self._starter() if not self.tree.nodes else None
            if starter is not None:
                self._root(pool, runner, in_flight, starter)
            while True:
                host.wait_unpaused()
                reason = self._budget()
                if reason:
                    end = reason
                    break
                if len(in_flight) >= self.workers or self._calls_held():
                    self._collect(in_flight, timeout=0.5)  # a stop or a pause: seen within 0.5 s
                    continue
                if self.concurrent:
                    self._submit(rng, pool, runner, in_flight)
                    continue
                try:
                    self._grow(rng, pool, runner, in_flight)
                except ModelExhausted as exc:
                    end = ("stopped", f"model ran out: {exc}")
                    break
                except ModelError as exc:
                    end = ("failed", f"model error: {exc}")
                    break
            while in_flight:
                self._collect(in_flight, timeout=None)
            self._select(runner, split)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            runner.close()
            remove_split(split)
            for m in {id(m): m for m in models if m is not host.model}.values():
                m.close()
            if len(models) > 1 and hasattr(host.model, "replicas"):
                host.model.replicas(1)  # its cores are its own again
        self.ended = True
        host.finish_search(*end)
        shutil.rmtree(nodes_root, ignore_errors=True)

    def _starter(self) -> str | None:
        """The task's starter script as the first node, unless the session says no."""
        if not self.host.config.from_starter:
            return None
        return runnable_starter(self.host.task, self.host.workspace.root)

    def _root(
        self, pool: ThreadPoolExecutor, runner: NodeRunner, in_flight: InFlight, script: str
    ) -> None:
        """The starter as the first node: a draft the model did not write."""
        with self._ids:
            node = max(self.tree.next_id(), self._reserved + 1)
            self._reserved = node
        why = "the task's starter script, run as given: a valid root to improve"
        self._emit(PolicyChoice(policy=self.policy.name, node=node, operator="draft", reason=why))
        self._emit(
            NodeCreated(
                node=node,
                operator="draft",
                form="starter",
                plan="Run the task's starter script as given.",
                script=script,
            )
        )
        self._start(pool, runner, in_flight, node)

    def _calls_held(self) -> bool:
        """Generations in flight would spend the rest of the step budget: wait for them."""
        with self._ids:
            return bool(self._generating) and (
                self.calls + self._generating >= self.host.budget.last_step
            )

    def _choice(self, rng: random.Random) -> tuple[int, Choice]:
        """Choose the next node and record the choice; its id is reserved at once. An edit
        names the line of its parent it changes (chosen here, so a replay shows it)."""
        choice = self._choose(rng)
        if choice.operator == "edit" and choice.parents and self.host.model.supports_grammar:
            with self.tree.lock:
                parent = self.tree.nodes[choice.parents[0]]
                kids = [self.tree.nodes[c].script for c in parent.children if c in self.tree.nodes]
            focus = pick_tweak(parent.script, self.columns, rng, kids)
            if focus is not None:
                choice = choice.model_copy(update={"focus": focus})
                choice.reason += f"; change {focus.text[:60]} in: {focus.line.strip()[:80]}"
        with self._ids:
            node = max(self.tree.next_id(), self._reserved + 1)
            self._reserved = node
        # the memory as it stands at the choice, not when a worker gets to it: what the store
        # rebuilds for the node (trainer.distil_data) is then what its prompt showed
        choice = choice.model_copy(update={"memory": memory_text(self.tree)})
        self._emit(
            PolicyChoice(
                policy=self.policy.name,
                node=node,
                operator=choice.operator,
                parents=choice.parents,
                reason=choice.reason,
            )
        )
        return node, choice

    def _generate(self, node: int, choice: Choice, model: Any) -> Proposal:
        """Ask the model for the chosen node and record it (a proposal's error: a buggy node)."""
        with self.tree.lock:
            parents = [self.tree.nodes[p] for p in choice.parents]
        hints = self._hints(choice.parents)
        ctx = context_of(
            self.host.task, self.host.state.preview, choice.memory, hints, self.columns
        )
        proposal = propose(
            model,
            choice.operator,
            ctx,
            parents,
            self._emit,
            temperature=self.host.temperature,
            calls_left=lambda: self._budget() is None,
            focus=choice.focus,
            node=node,
        )
        self._emit(
            NodeCreated(
                node=node,
                parents=choice.parents,
                operator=choice.operator,
                form=proposal.form,  # type: ignore[arg-type]
                plan=proposal.plan,
                script=proposal.script,
                tokens=proposal.tokens,
                hints=hints,
            )
        )
        return proposal

    def _grow(
        self, rng: random.Random, pool: ThreadPoolExecutor, runner: NodeRunner, in_flight: InFlight
    ) -> None:
        node, choice = self._choice(rng)
        proposal = self._generate(node, choice, self.host.model)  # only this thread generates
        if proposal.error is not None:
            self._emit(NodeFinished(node=node, status="buggy", error=proposal.error))
        else:
            self._start(pool, runner, in_flight, node)

    def _submit(
        self, rng: random.Random, pool: ThreadPoolExecutor, runner: NodeRunner, in_flight: InFlight
    ) -> None:
        """Models that overlap: a worker generates the node (on a free context), then runs it."""
        node, choice = self._choice(rng)
        with self._ids:
            self._generating += 1
        worker = len(in_flight)

        def job() -> NodeFinished | None:
            model = self._pool.get()
            try:
                proposal = self._generate(node, choice, model)
            except ModelError as exc:
                self._model_end = (
                    ("stopped", f"model ran out: {exc}")
                    if isinstance(exc, ModelExhausted)
                    else ("failed", f"model error: {exc}")
                )
                return None  # no node was written: the search ends (see _budget)
            finally:
                self._pool.put(model)
                with self._ids:
                    self._generating -= 1
            if proposal.error is not None:
                return NodeFinished(node=node, status="buggy", error=proposal.error)
            started = lambda: self._emit(NodeStarted(node=node, worker=worker))  # noqa: E731
            return runner.run(node, proposal.script, started)

        in_flight[pool.submit(job)] = node

    def _start(
        self, pool: ThreadPoolExecutor, runner: NodeRunner, in_flight: InFlight, node: int
    ) -> None:
        if node in in_flight.values():
            return  # already running: a node runs once
        script = self.tree.nodes[node].script

        def started(worker: int = len(in_flight)) -> None:
            self._emit(NodeStarted(node=node, worker=worker))

        in_flight[pool.submit(runner.run, node, script, started)] = node

    def _collect(self, in_flight: InFlight, timeout: float | None) -> None:
        done, _ = wait(list(in_flight), timeout=timeout, return_when=FIRST_COMPLETED)
        for future in done:
            node = in_flight.pop(future)
            try:
                finished = future.result()
                if finished is None:
                    continue
            except Exception as exc:  # noqa: BLE001 - one worker's crash fails its node only
                finished = NodeFinished(
                    node=node, status="buggy", error=f"worker crashed: {type(exc).__name__}: {exc}"
                )
            self._emit(finished)

    def _select(self, runner: NodeRunner, split) -> None:  # noqa: ANN001
        made = select(self.tree, runner, split, self.host.private)
        self._emit(made)
        if made.node is not None:
            self.host.adopt_node(made.node)
