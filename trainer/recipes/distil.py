"""distil: learn the steps that made a search better (expert iteration on the search tree).

Data (trainer.distil_data): in stored search sessions, every node that beat its parent (on the
hidden selection score where both have one, else the search score) and the path from the root
to it; each improve, edit and debug step on such a path is an item whose prompt is the search
operator's own (so training and inference prompts match) and whose target is the child's answer.

Without `--rounds` the run learns from the store's search sessions. With `--rounds N` each
round first searches every training task at a fresh seed (recipes.distil_search: the current
policy, or `--search-model`), then takes `round_updates` updates on everything found so far.
Each optimiser step also imitates the anchor's demonstrations (`--anchor`, recipes.anchor), so
the Drafts the search starts from do not drift. A round that found nothing new still trains
the anchor; with neither, the run stops and says why. Per round the recipe records the nodes
searched, the improvements found and the items trained on (`rounds` in its state and in the
run's `distil.json`); each checkpoint carries that state, so `--resume` goes on after the last
finished update, and a round's search is never run twice.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

from ..distil_data import SessionYield, distil_steps
from ..heldout import TRAIN_TASKS, held_out_reason
from ..provenance import TrainingData
from .common import Collected, NothingToTrain, RunContext, TrainItem, answer_ids, fits
from .distil_record import RoundRecord, write_record
from .distil_search import round_eval, round_seed, search_round
from .distil_sweep import SWEEP_FILE, Sweep, SweepStep, not_swept, run_sweep
from .sft import answer_logprobs, prefixed

MAKE_SESSIONS = (
    "mlagent-train run --recipe distil --rounds N (it searches first), or record search "
    "sessions: mlagent run --agent search --task NAME"
)


class DistilRecipe:
    name = "distil"

    def __init__(self, ctx: RunContext) -> None:
        opts = ctx.options
        self.opts = opts.distil
        self._notes: list[str] = []
        named = bool(ctx.tasks or opts.tasks or opts.task_dirs)
        if not named:
            from mlagent_tui.core.tasks import find_task

            ctx.tasks = [find_task(n) for n in TRAIN_TASKS if n not in opts.exclude_tasks]
        if self.opts.procedural and self.opts.rounds:  # new tasks matter where a search runs
            ctx.tasks = ctx.tasks + procedural_tasks(ctx.out_dir, self.opts)
        for task in ctx.tasks:
            why = held_out_reason(task.name)
            if why is not None:
                raise ValueError(f"distil trains on no held-out task: {why}")
        # stored sessions of any task not held out, unless tasks were named or rounds search
        self.task_names = {t.name for t in ctx.tasks} if named or self.opts.rounds else None
        self.exclude = set(opts.exclude_tasks)
        self.rounds: list[RoundRecord] = []
        self.items: list[TrainItem] = []
        self.order: list[list[int]] = []
        self.cursor = 0
        self.sampler: Any = None
        self.anchor = self._anchor(ctx)
        self.training_data = TrainingData(runs=[])
        if self.anchor is not None:
            self.training_data = self.training_data.merge(self.anchor.training_data)
        self.sweep_steps: list[SweepStep] = []
        seeds = max(self.opts.rounds or 0, self.opts.sweep_seeds if self.opts.rounds else 0)
        for r in range(1, seeds + 1):  # recorded up front: held out of eval
            for task in ctx.tasks:
                self.training_data.add(task.name, round_seed(opts.seed, r))
        self.order_seed = "0"
        self._loaded = False
        if not self.opts.rounds:
            record = RoundRecord(round=0)
            self._load(ctx, record)
            if not self.items:
                raise NothingToTrain(self._nothing(ctx))
            self.rounds.append(record)
            write_record(ctx.out_dir, self.rounds)

    @property
    def notes(self) -> list[str]:
        """The run's notes, then one line per round (what `run` prints at the end)."""
        lines = []
        for r in self.rounds:
            where = f"round {r.round} (seed {r.seed})" if r.round else "the stored sessions"
            bases = ", ".join(f"{n} by {b}" for b, n in sorted(r.bases.items())) or "none"
            if r.sweep:
                lines.append(f"sweep before round {r.round}: {r.swept} session(s)")
            lines += [f"sweep of {t}'s starter: {what}" for t, what in sorted(r.sweep.items())]
            lines.append(
                f"{where}: {r.nodes_searched} node(s) searched, {r.improvements_found} "
                f"improvement(s) found; trained on {r.items} distilled step(s) (judged: {bases})"
                + ("; the anchor alone" if r.anchor_only else "")
            )
        return self._notes + lines

    # -- setup -------------------------------------------------------------------------------
    def _anchor(self, ctx: RunContext) -> Any:
        if not ctx.options.anchor:
            return None
        from .anchor import Anchor

        try:
            anchor = Anchor(ctx, agents=("solve", "research"))  # its model drives both
        except NothingToTrain as exc:
            self._notes.append(f"not anchored: {exc}")
            return None
        self._notes += anchor.notes
        return anchor

    def _nothing(self, ctx: RunContext) -> str:
        yields = distil_steps(ctx.store, tasks=self.task_names)
        if not yields:
            return f"no search sessions of the run's tasks in {ctx.store.path}: {MAKE_SESSIONS}"
        nodes = sum(y.nodes for y in yields)
        return (
            f"no search session in {ctx.store.path} found an improvement to learn from "
            f"({len(yields)} session(s), {nodes} node(s)): {MAKE_SESSIONS}"
        )

    # -- data --------------------------------------------------------------------------------
    def _load(self, ctx: RunContext, record: RoundRecord) -> None:
        """Every stored search session's steps become the items; `record` gets the counts."""
        yields = distil_steps(ctx.store, tasks=self.task_names, exclude=self.exclude)
        mine = set(record.sessions)
        new = [y for y in yields if y.session_id in mine] if record.round else yields
        record.nodes_searched = sum(y.nodes for y in new)
        record.improvements_found = sum(y.improvements for y in new)
        if self.opts.rounds and self.opts.sweep_seeds and not self.sweep_steps:
            path = ctx.out_dir / SWEEP_FILE  # resumed: what the sweep taught
            if path.is_file():
                self.sweep_steps = Sweep.model_validate_json(path.read_text()).steps
        steps, superseded = not_swept([s for y in yields for s in y.steps], self.sweep_steps)
        if superseded:
            note = f"left out {superseded} search step(s) on tasks the sweep taught"
            self._notes = [n for n in self._notes if not n.endswith("tasks the sweep taught")]
            self._notes.append(note)
        record.bases = dict(Counter(s.basis for s in steps))
        self.items = self._items(ctx, [*steps, *self.sweep_steps])
        record.items = len(self.items)
        for y in yields:
            if y.steps:
                self.training_data.add(y.task, y.seed)
        self._note_skips(yields)
        self._loaded = True

    def _note_skips(self, yields: list[SessionYield]) -> None:
        skipped = Counter(y.skipped for y in yields if y.skipped)
        for why, n in sorted(skipped.items()):
            note = f"left out {n} search session(s): {why}"
            if note not in self._notes:
                self._notes.append(note)

    def _items(self, ctx: RunContext, steps: list[Any]) -> list[TrainItem]:
        items = []
        for s in steps:
            item = TrainItem(
                prompt_ids=ctx.policy.chat_prompt_ids(s.messages),
                completion_ids=answer_ids(ctx.policy, s.response),
                reward=1.0,
                group=f"{s.task}/{s.operator}",
                valid=True,
            )
            if len(item.prompt_ids) + len(item.completion_ids) <= ctx.options.sft_max_tokens:
                if fits(ctx.policy, item):
                    items.append(item)
        return items

    def _order(self, ctx: RunContext, key: str) -> list[list[int]]:
        """Batches of `sft_batch` items in an order drawn from the run's seed and `key`."""
        rng = random.Random(f"{ctx.options.seed}/{key}")
        idx = list(range(len(self.items)))
        rng.shuffle(idx)
        size = ctx.options.sft_batch
        return [idx[k : k + size] for k in range(0, len(idx), size)]

    # -- rounds ------------------------------------------------------------------------------
    def _round_of(self, update: int) -> int:
        """The round `update` belongs to; updates past the last round's (`--resume --steps`
        with a larger total) go on training it, and never search a round `--rounds` did not
        ask for."""
        if not self.opts.rounds:
            return 0
        return min((update - 1) // self.opts.round_updates + 1, self.opts.rounds)

    def _start_round(self, ctx: RunContext, round_no: int, phase: Any) -> None:
        from .sampler import LlamaSampler, wants_llama

        wanted = self.opts.search_model == "policy" or self.opts.eval_seeds
        if wanted and self.sampler is None and wants_llama(ctx.options.sampler, ctx.policy):
            self.sampler = LlamaSampler(ctx.policy)
        record = RoundRecord(round=round_no, seed=round_seed(ctx.options.seed, round_no))
        record.held_out = round_eval(ctx, self.sampler, round_no)
        if round_no == 1 and self.opts.sweep_seeds:
            seeds = [round_seed(ctx.options.seed, r) for r in range(1, self.opts.sweep_seeds + 1)]
            sweep = run_sweep(ctx, ctx.tasks, seeds, lambda m: phase(f"round 1: {m}"))
            record.swept, record.sweep = sweep.sessions, sweep.taught
            self.sweep_steps = sweep.steps
        record.sessions = search_round(ctx, round_no, self.sampler, phase)
        self._load(ctx, record)
        self.order_seed, self.cursor = f"round-{round_no}", 0
        self.order = self._order(ctx, self.order_seed)
        if not self.items:
            if self.anchor is None:
                raise NothingToTrain(
                    f"round {round_no}: the search found no improvement ({record.nodes_searched}"
                    f" node(s)) and there is no anchor to train (record demonstrations: "
                    "mlagent-train demos --tasks NAMES); stopped"
                )
            record.anchor_only = True
            self._notes.append(
                f"round {round_no}: the search found no improvement; the round trains the anchor"
            )
        self.rounds.append(record)
        write_record(ctx.out_dir, self.rounds)

    # -- the Recipe protocol -----------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "rounds": [r.model_dump() for r in self.rounds],
            "cursor": self.cursor,
            "order_seed": self.order_seed,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.rounds = [RoundRecord.model_validate(r) for r in state.get("rounds", [])]
        self.cursor = int(state.get("cursor", 0))
        self.order_seed = str(state.get("order_seed", "0"))
        self.order = []  # rebuilt from the store at the next collect
        self._loaded = self._loaded and not self.opts.rounds

    def collect(self, ctx: RunContext, phase: Any) -> Collected:
        round_no = self._round_of(ctx.update)
        if round_no and (not self.rounds or self.rounds[-1].round < round_no):
            self._start_round(ctx, round_no, phase)
        elif not self._loaded:  # resumed inside a round: its search is not run again
            self._load(ctx, self.rounds[-1].model_copy())
        if not self.order and self.items:
            self.order = self._order(ctx, self.order_seed)
        batch: list[TrainItem] = []
        if self.items:
            if self.cursor >= len(self.order):
                self.order_seed, self.cursor = f"update-{ctx.update}", 0
                self.order = self._order(ctx, self.order_seed)
            batch = [self.items[i] for i in self.order[self.cursor]]
            self.cursor += 1
        what = f"{len(batch)} distilled item(s)" + (" and the anchor" if self.anchor else "")
        phase(f"round {round_no}: {what}" if round_no else what)
        tokens = sum(len(i.prompt_ids) + len(i.completion_ids) for i in batch)
        return Collected(items=batch, extra={"round": round_no, "tokens": tokens})

    def update(self, ctx: RunContext, optimizer: Any, items: list[TrainItem]) -> dict[str, float]:
        """One optimiser step: each answer's negative log-likelihood, its tokens weighed by
        their own loss (`hard_token_loss`; every distilled step weighs the same), plus the
        anchor's loss."""
        import torch

        optimizer.zero_grad(set_to_none=True)
        loss_sum = plain_sum = 0.0
        for i, prefix in prefixed(ctx, items):
            nll = -answer_logprobs(ctx, items[i], prefix)
            loss = hard_token_loss(nll) / len(items)
            loss.backward()
            loss_sum += float(loss.detach())
            plain_sum += float(nll.detach().mean()) / len(items)
        anchor_loss = self.anchor.backward(ctx) if self.anchor is not None else 0.0
        torch.nn.utils.clip_grad_norm_(ctx.policy.trainable_parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        ctx.policy.model.eval()
        if not math.isfinite(loss_sum + anchor_loss):
            raise FloatingPointError(f"non-finite distil loss: {loss_sum}, {anchor_loss}")
        return {
            "loss": round(plain_sum, 6),
            "hard_loss": round(loss_sum, 6),
            "kl": 0.0,
            "clip_frac": 0.0,
            "entropy": 0.0,
            "ratio_mean": 1.0,
            "items_with_signal": float(len(items)),
            "anchor_loss": round(anchor_loss, 6),
        }


def hard_token_loss(nll: Any) -> Any:
    """An answer's token losses, each weighed by itself (detached): sum(nll^2) / sum(nll).

    A taught answer is mostly copied text the model already writes (the prompt's column names
    in order, the menu's format); what it learns sits in one or two tokens where the answer
    leaves the copy: after the starter's column, `worst_radius` where the data's next column
    is `mean_texture`. Under the plain mean that token is 1 of 112 and kept p = 0.0003 after ten
    passes; weighed by its loss it carries most of its answer's gradient until learned, when
    the weights even out again. The value stays a mean of token losses (at most the largest)."""
    weight = nll.detach()
    return (weight * nll).sum() / weight.sum().clamp_min(1e-6)


def procedural_tasks(out_dir: Path, opts: Any) -> list[Any]:
    """The run's procedural training tasks, written once into OUT/procedural (reused after)."""
    from mlagent_tui.core.tasks import find_task
    from trainer.procedural import generate_tasks

    if opts.procedural_seed in _eval_seeds():
        raise ValueError(
            f"procedural seed {opts.procedural_seed} is kept for evaluation; choose another"
        )
    folder = out_dir / "procedural"
    made = sorted(p for p in folder.glob("proc-*") if (p / "task.toml").is_file())
    if len(made) < opts.procedural:
        generate_tasks(folder, opts.procedural, opts.procedural_seed, force=True)
        made = sorted(p for p in folder.glob("proc-*") if (p / "task.toml").is_file())
    return [find_task(task_dir=str(p)) for p in made[: opts.procedural]]


def _eval_seeds() -> tuple[int, ...]:
    from ..heldout import PROCEDURAL_EVAL_SEEDS

    return PROCEDURAL_EVAL_SEEDS


def precheck(options: Any) -> str | None:
    """Before any model loads: a held-out task raises ValueError; without `--rounds`, the
    one line saying why the store gives nothing to learn (None: it does)."""
    from mlagent_tui.core.home import Home
    from mlagent_tui.core.store import Store

    from ..distil_data import distil_steps

    names = list(options.tasks) + [Path(d).name for d in options.task_dirs]
    for name in names:
        why = held_out_reason(name)
        if why is not None:
            raise ValueError(f"distil trains on no held-out task: {why}")
    if options.distil.rounds:
        return None
    home = Home.at(options.home or (Path(options.db).parent if options.db else None))
    store = Store(Path(options.db) if options.db else home.db_path)
    try:
        wanted = set(names) or None
        yields = distil_steps(store, tasks=wanted, exclude=set(options.exclude_tasks))
        if any(y.steps for y in yields):
            return None
        if not yields:
            return f"no search sessions in {store.path} to learn from: {MAKE_SESSIONS}"
        return (
            f"no search session in {store.path} found an improvement to learn from "
            f"({len(yields)} session(s), {sum(y.nodes for y in yields)} node(s)): {MAKE_SESSIONS}"
        )
    finally:
        store.close()
