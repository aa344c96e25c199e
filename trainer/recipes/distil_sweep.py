"""A model-free teacher for the solve agent's menu: every one-setting change of each training
task's starter, run and graded, at a few training seeds.

The model-driven search finds a handful of improvements an hour on 2 cores, and which setting
helps a task varies by seed in what it finds, so the menu answers it teaches did not move the
model's choice on fresh seeds (7 better, 6 worse in 48 paired sessions). This sweep asks no
model: the starter runs once (a 1-step solve session), then one forked session per menu
choice (every value of every setting; a column list gains the first or the last columns it
may take, as many as one edit adds) runs the solve agent's edit step with that answer. A
choice's gain is its session's graded score against the starter's, in the metric's direction,
where `mlagent-train eval` measures a session. Per task, the choice that beat the starter at
more than half of the swept seeds, by the largest mean gain, is taught as the answer to the
exact prompt the solve agent sends at each seed (trainer.prompts.step_prompt); a task where no
choice does that teaches nothing.
The sessions are ordinary solve sessions in the run's store (`mlagent replay` shows them);
what was taught is kept in the run's `sweep.json`, so a resumed run does not sweep again.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mlagent_tui.core.agent.menu import choice_answer, menu_of
from mlagent_tui.core.agent.tweak import MAX_ADDED, Tweak, list_parts, options
from mlagent_tui.core.atomic import write_atomic
from mlagent_tui.core.llm import Completion

from ..distil_data import value_answer
from ..prompts import prepared_columns, step_prompt
from ..rollout import FixedResponse, new_session, run_session, solution_sessions
from .common import RunContext

SWEEP_FILE = "sweep.json"


class SweepChoice(BaseModel):
    key: str  # the setting (line, place, kind) and the value: the same choice at every seed
    label: str  # "LinearRegression -> Ridge"
    answer: str  # the menu answer: Setting / Plan / Value
    score: float | None = None
    gain: float | None = None  # better than the starter by this much (None: not valid)


class SweepSeed(BaseModel):
    """One task at one seed: the starter's score, the edit prompt and every choice's result."""

    task: str
    seed: int
    session_id: str
    starter_score: float | None = None
    messages: list[dict[str, str]] = Field(default_factory=list)
    choices: list[SweepChoice] = Field(default_factory=list)


class SweepStep(BaseModel):
    """A taught answer (the shape distil's items are built from)."""

    task: str
    seed: int
    operator: str = "sweep"
    messages: list[dict[str, str]]
    response: str


class Sweep(BaseModel):
    seeds: list[SweepSeed] = Field(default_factory=list)
    taught: dict[str, str] = Field(default_factory=dict)  # task -> what was taught, or why not
    steps: list[SweepStep] = Field(default_factory=list)

    @property
    def sessions(self) -> int:
        return sum(1 + len(s.choices) for s in self.seeds)


def column_additions(tweak: Tweak, vocab: list[str]) -> list[str]:
    """A column list's values with the most columns one edit may add (MAX_ADDED): the first
    of the data's columns it may take and, where there are more, the last. A table's columns
    come in blocks (breast-cancer's 30: means, errors, worst values), and the first block is
    not always the one that helps: logistic regression on the starter's column plus the first
    ten scores 0.92 in 5-fold validation at three training seeds, plus the last ten 0.96."""
    quote, kept = list_parts(tweak)
    left = options(tweak, vocab)
    blocks = [left[:MAX_ADDED], left[-MAX_ADDED:]] if left else []
    values = [kept + "".join(f", {quote}{c}{quote}" for c in b) + "]" for b in blocks]
    return list(dict.fromkeys(values))


def menu_choices(script: str, vocab: list[str]) -> list[SweepChoice]:
    """Every answer the solve agent's menu on `script` can take (columns: two blocks)."""
    menu = menu_of(script, vocab, [script])
    out = []
    for tweak in menu:
        values = options(tweak, vocab)
        if tweak.kind == "names":
            values = column_additions(tweak, vocab)
        for value in values:
            reply = choice_answer(menu, tweak, value_answer(tweak, f"Value: {value}"))
            if reply is None:  # pragma: no cover - every setting of the menu is in it
                continue
            out.append(
                SweepChoice(
                    key=f"{tweak.line}:{tweak.start}:{tweak.kind}:{tweak.text}={value}",
                    label=f"{tweak.text} -> {value}",
                    answer=reply,
                )
            )
    return out


def sweep_seed(ctx: RunContext, task: Any, seed: int) -> SweepSeed:
    """Run the starter, then every menu choice forked after it; graded outcomes."""
    idle = FixedResponse("sweep", Completion(text=""))  # the starter step asks no model
    starter = run_session(
        lambda: new_session(
            ctx.home,
            ctx.store,
            task,
            idle,
            agent="solve",
            max_steps=1,
            seed=seed,
            solve_starter=True,
            exec_timeout_s=ctx.options.exec_timeout_s,
        ),
        ctx.store,
        task,
        instrument="none",
    )
    out = SweepSeed(task=task.name, seed=seed, session_id=starter.session_id)
    if not starter.valid or not starter.steps or starter.steps[0].score is None:
        return out  # no valid starter: no edit step follows it
    out.starter_score = starter.final_score
    config = json.loads((ctx.store.session(starter.session_id) or {}).get("config") or "{}")
    out.messages = step_prompt(ctx.store, starter.session_id, 2, task, config)
    script = _starter_script(ctx, starter.session_id)
    out.choices = menu_choices(script, prepared_columns(str(task.folder), seed))
    answers = [Completion(text=c.answer) for c in out.choices]
    runs = solution_sessions(
        ctx.home,
        ctx.store,
        task,
        answers,
        model_name="sweep",
        parent=(starter.session_id, 1),
        exec_timeout_s=ctx.options.exec_timeout_s,
        seed=seed,
        instrument="none",
    )
    sign = 1.0 if task.spec.metric.higher_is_better else -1.0
    for choice, run in zip(out.choices, runs, strict=True):
        if run.valid and run.final_score is not None and out.starter_score is not None:
            choice.score = run.final_score
            choice.gain = sign * (run.final_score - out.starter_score)
    return out


def _starter_script(ctx: RunContext, session_id: str) -> str:
    for event in ctx.store.events(session_id):
        p = event.payload
        if p.kind == "action_started" and p.action == "Run Solution":
            return str(p.action_input.get("content", ""))
    return ""


def teach(seeds: list[SweepSeed]) -> tuple[list[SweepStep], dict[str, str]]:
    """Per task, the choice that beat the starter at more than half of its swept seeds with
    the largest mean gain, as the answer at each of those seeds' prompts."""
    by_task: dict[str, list[SweepSeed]] = defaultdict(list)
    for s in seeds:
        by_task[s.task].append(s)
    steps: list[SweepStep] = []
    taught: dict[str, str] = {}
    for task, runs in by_task.items():
        gains: dict[str, list[float]] = defaultdict(list)
        for s in runs:
            for c in s.choices:
                gains[c.key].append(c.gain if c.gain is not None else float("-inf"))
        swept = len(runs)
        best, best_mean = None, 0.0
        for key, got in gains.items():
            wins = sum(g > 0 for g in got)
            mean = sum(got) / swept if len(got) == swept else float("-inf")
            if wins * 2 > swept and mean > best_mean:
                best, best_mean = key, mean
        if best is None:
            taught[task] = f"no change beat the starter at most of {swept} seed(s)"
            continue
        label = ""
        for s in runs:
            for c in s.choices:
                if c.key == best:
                    label = c.label
                    steps.append(
                        SweepStep(task=task, seed=s.seed, messages=s.messages, response=c.answer)
                    )
        wins = sum(g > 0 for g in gains[best])
        taught[task] = f"{label} (better at {wins}/{swept} seeds, mean gain {best_mean:+.4g})"
    return steps, taught


def not_swept(steps: list[Any], taught: list[SweepStep]) -> tuple[list[Any], int]:
    """The search's steps on tasks the sweep taught nothing for, and how many were left out.

    The sweep ran every one-setting change of a task's starter at each of its seeds; the
    search's steps on that task come from one seed and mostly make those same changes, so
    where they disagree they teach a choice the sweep measured and ranked lower (a shorter
    column list, a swap the model then carried to other tasks' menus: 26 updates with both
    chose gradient boosting on digits, where the sweep's extra trees was better at 3/3 seeds).
    """
    swept = {s.task for s in taught}
    kept = [s for s in steps if s.task not in swept]
    return kept, len(steps) - len(kept)


def run_sweep(
    ctx: RunContext, tasks: list[Any], seeds: list[int], phase: Callable[[str], None]
) -> Sweep:
    """The sweep of every task at every seed (read back from `sweep.json` where it ran)."""
    path = ctx.out_dir / SWEEP_FILE
    if path.is_file():
        return Sweep.model_validate_json(path.read_text())
    done: list[SweepSeed] = []
    for i, task in enumerate(tasks, 1):
        for seed in seeds:
            phase(f"sweep {i}/{len(tasks)} on {task.name} (seed {seed})")
            done.append(sweep_seed(ctx, task, seed))
    steps, taught = teach(done)
    sweep = Sweep(seeds=done, taught=taught, steps=steps)
    write_sweep(ctx.out_dir, sweep)
    return sweep


def write_sweep(out_dir: Path, sweep: Sweep) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / SWEEP_FILE, sweep.model_dump_json(indent=2) + "\n")
