"""Stored sessions -> training samples: step-wise states, single-shot solutions, trajectories.

Everything comes from the store (events and derived rows); prompts are rebuilt by running the
agent on the rebuilt state (trainer.prompts). A sample keeps what the sampler recorded — the model
name, token ids and log-probabilities where the backend had them — so ratio-based recipes can
tell which samples were drawn by the base model being trained.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from mlagent_tui.core.llm.adapter import base_identity, recorded_identity
from mlagent_tui.core.store import Store, trainable_session_rows
from mlagent_tui.core.tasks import Task, TaskError, TaskSpec

from .prompts import Messages, retry_prompt, session_task, step_prompt

TIME_BUDGET_PREFIX = "time budget"


class StepSample(BaseModel):
    """One model answer at one step of a logged session, with what followed from it."""

    session_id: str
    task: str
    task_folder: str
    agent: str
    model: str
    base_model: str | None
    step: int
    attempt: int = 1
    mode: str = ""
    messages: Messages
    response: str
    action: str = ""
    parsed: bool = True
    ok: bool = False
    valid: bool = False
    score: float | None = None
    parent_score: float | None = None
    reward: float = 0.0
    exec_seconds: float = 0.0
    timed_out: bool = False
    output: str = ""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    state_key: str = ""

    @property
    def has_sampler_logprobs(self) -> bool:
        return bool(self.logprobs) and bool(self.token_ids)


class Trajectory(BaseModel):
    """A whole session: its answers in order and how it ended (for SandMLE's recipe)."""

    session_id: str
    task: str
    model: str
    base_model: str | None
    steps: list[StepSample]
    status: str = ""
    end_reason: str = ""
    final_score: float | None = None
    valid: bool = False
    timed_out: bool = False
    best_score: float | None = None


def base_model_of(model_name: str) -> str | None:
    """The base model a session's sampler came from; None when it cannot be known (replay).

    A bare `local` and `smollm2` are both the bundled SmolLM2 (`smollm2`); `local` with the
    shipped adapter is recorded as `local+mlagent-<hash>`; a trainer checkpoint is named
    `policy:<base>@<checkpoint>`.
    """
    name = (model_name or "").strip()
    if not name or name.startswith("replay:"):
        return None
    if name.startswith("policy:"):
        name = name[len("policy:") :].split("@", 1)[0]
    return recorded_identity(name) if name else None


def unit_score(spec: TaskSpec, score: float | None, valid: bool) -> float:
    """A task's metric mapped to [0, 1]: 0 for no valid submission, 0.1 at the starter baseline,
    1 at the gold threshold, linear in between (so rewards compare across tasks and metrics)."""
    if not valid or score is None:
        return 0.0
    base, gold = spec.baseline.score, spec.thresholds.gold
    if gold == base:
        reached = score >= gold if spec.metric.higher_is_better else score <= gold
        return 1.0 if reached else 0.1
    frac = (score - base) / (gold - base)
    return round(0.1 + 0.9 * min(max(frac, 0.0), 1.0), 6)


def state_key(task: str, messages: Messages) -> str:
    """Samples answering the very same prompt share a state (a GRPO group)."""
    digest = hashlib.sha256(json.dumps([task, messages], sort_keys=True).encode()).hexdigest()
    return digest[:16]


def _mode(agent: str, messages: Messages) -> str:
    if agent != "solve":
        return "research"
    first = messages[-1]["content"].split(":", 1)[0].strip().lower() if messages else ""
    return first if first in ("draft", "debug", "improve") else "solve"


def session_samples(store: Store, row: dict[str, Any]) -> list[StepSample]:
    """Every model answer of purpose `step` in a session, oldest first."""
    sid = row["id"]
    config = json.loads(row.get("config") or "{}")
    try:
        task = session_task(config or {"task": row["task"]})
    except TaskError:
        return []  # the task folder is gone: nothing can be rebuilt or graded
    agent = row.get("agent") or config.get("agent") or "research"
    by_step: dict[int, list] = defaultdict(list)
    for event in store.events(sid):
        by_step[event.step].append(event.payload)
    completed = {r["step"]: r for r in store.rows("steps", sid) if r["completed"]}
    samples: list[StepSample] = []
    best: float | None = None
    for step in sorted(completed):
        payloads = by_step.get(step, [])
        scores = [p for p in payloads if p.kind == "score_recorded" and p.split == "validate"]
        score = scores[-1].score if scores else None
        valid = bool(scores and scores[-1].valid)
        if any(p.kind == "llm_call" and p.purpose == "step" for p in payloads):
            base = step_prompt(store, sid, step, task, {**config, "agent": agent})
            step_row = {**completed[step], "valid": valid, "score": score, "best": best}
            samples.extend(_step_samples(sid, task, agent, base, payloads, step_row))
        # a step without a model call (the solve agent's starter) is no sample, but its score
        # is the parent score of the answers after it
        if valid and score is not None:
            unit = unit_score(task.spec, score, True)
            best = unit if best is None else max(best, unit)
    return samples


def _step_samples(
    sid: str, task: Any, agent: str, base: Messages, payloads: list[Any], result: dict[str, Any]
) -> list[StepSample]:
    """One sample per model answer of a step (a retry after a parse error is one more)."""
    calls = [p for p in payloads if p.kind == "llm_call" and p.purpose == "step"]
    errors = [p for p in payloads if p.kind == "parse_error"]
    execs = [p for p in payloads if p.kind == "exec_finished"]
    valid, score = result["valid"], result["score"]
    samples: list[StepSample] = []
    for attempt, call in enumerate(calls, start=1):
        failures = [(e.raw, e.error) for e in errors[: attempt - 1]]
        messages = retry_prompt(base, agent, failures)
        final = attempt == len(calls) and len(errors) < len(calls)
        samples.append(
            StepSample(
                session_id=sid,
                task=task.name,
                task_folder=str(task.folder),
                agent=agent,
                model=call.model,
                base_model=base_model_of(call.model),
                step=result["step"],
                attempt=attempt,
                mode=_mode(agent, base),
                messages=messages,
                response=call.text,
                action=(result["action"] or "") if final else "",
                parsed=final,
                ok=bool(result["ok"]) if final else False,
                valid=valid if final else False,
                score=score if final else None,
                parent_score=result["best"],
                reward=unit_score(task.spec, score, valid) if final else 0.0,
                exec_seconds=round(sum(e.duration_s for e in execs), 4) if final else 0.0,
                timed_out=any(e.timed_out for e in execs) if final else False,
                output=(result["observation"] or "")[-4000:] if final else "",
                token_ids=call.token_ids,
                logprobs=call.logprobs,
                state_key=state_key(task.name, messages),
            )
        )
    return samples


def load_samples(store: Store) -> list[StepSample]:
    """Step samples of every trainable session in the store."""
    out: list[StepSample] = []
    for row in trainable_session_rows(store):
        out.extend(session_samples(store, row))
    return out


def single_shot_samples(samples: list[StepSample]) -> list[StepSample]:
    """Answers that were one complete solution script (the solve agent's Run Solution)."""
    return [
        s for s in samples if s.agent == "solve" and (s.action == "Run Solution" or not s.parsed)
    ]


def trajectories(store: Store) -> list[Trajectory]:
    """Whole sessions, each with its answers in order and how it ended."""
    out = []
    for row in trainable_session_rows(store):
        steps = session_samples(store, row)
        if not steps:
            continue
        valid_scores = [s.reward for s in steps if s.valid]
        out.append(
            Trajectory(
                session_id=row["id"],
                task=steps[0].task,
                model=row.get("model") or steps[0].model,
                base_model=base_model_of(row.get("model") or steps[0].model),
                steps=steps,
                status=row.get("status") or "",
                end_reason=row.get("end_reason") or "",
                final_score=row.get("final_score"),
                valid=bool(row.get("valid")),
                timed_out=(row.get("end_reason") or "").startswith(TIME_BUDGET_PREFIX)
                or any(s.timed_out for s in steps),
                best_score=max(valid_scores) if valid_scores else None,
            )
        )
    return out


def split_by_base_model(
    samples: list[StepSample], base_model: str
) -> tuple[list[StepSample], list[StepSample]]:
    """(usable, excluded): samples drawn by another known base model are excluded from
    ratio-based recipes; replayed ones (sampler unknown) stay, without a ratio."""
    base_model = base_identity(base_model)
    keep, other = [], []
    for s in samples:
        (other if s.base_model is not None and s.base_model != base_model else keep).append(s)
    return keep, other


def groups(samples: list[StepSample], min_size: int = 2) -> list[list[StepSample]]:
    """GRPO groups: samples of the same task and state; states seen once fall back to a group
    of their task and mode (else a lone answer would carry no signal)."""
    by_state: dict[tuple[str, str], list[StepSample]] = defaultdict(list)
    for s in samples:
        by_state[(s.task, s.state_key)].append(s)
    out, lone = [], defaultdict(list)
    for members in by_state.values():
        if len(members) >= min_size:
            out.append(members)
        else:
            for s in members:
                lone[(s.task, s.mode)].append(s)
    out.extend(m for m in lone.values() if len(m) >= min_size)
    return out


def ratio_eligible(sample: StepSample, base_model: str) -> bool:
    """The clipped importance ratio applies only to logprobs recorded by this base model."""
    return sample.has_sampler_logprobs and sample.base_model == base_identity(base_model)


def task_of(sample: StepSample) -> Task:
    from mlagent_tui.core.tasks import find_task

    return find_task(task_dir=sample.task_folder)


class RewardStats(BaseModel):
    count: int = 0
    mean: float = 0.0
    std: float = 0.0
    min: float = 0.0
    max: float = 0.0

    @classmethod
    def of(cls, values: list[float]) -> RewardStats:
        if not values:
            return cls()
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / len(values)
        return cls(
            count=len(values),
            mean=round(mean, 6),
            std=round(var**0.5, 6),
            min=min(values),
            max=max(values),
        )


class TaskData(BaseModel):
    task: str
    sessions: int
    samples: int
    solutions: int
    groups: int
    reward: RewardStats


class DataSummary(BaseModel):
    """What a database holds that the trainer can learn from."""

    db: str
    sessions_total: int
    sessions_trainable: int
    samples: int
    solutions: int
    parse_failures: int
    groups: int
    groups_with_signal: int = Field(description="groups whose rewards are not all equal")
    samples_with_logprobs: int
    models: dict[str, int]
    base_model: str | None = None
    excluded_other_base_model: int = 0
    excluded_sessions: int = 0
    reward: RewardStats
    tasks: list[TaskData]
    message: str


def data_summary(store: Store, base_model: str | None = None) -> DataSummary:
    """Sessions, samples, groups (task and state) and reward statistics; with `base_model`, how
    many samples a ratio-based recipe would exclude as drawn by another base model."""
    from mlagent_tui.core.store import session_count

    samples = load_samples(store)
    excluded: list[StepSample] = []
    if base_model is not None:
        samples, excluded = split_by_base_model(samples, base_model)
    grouped = groups(samples)
    models: dict[str, int] = defaultdict(int)
    for _sid, model in {(s.session_id, s.model) for s in samples + excluded}:
        models[model] += 1
    tasks = []
    for name in sorted({s.task for s in samples}):
        mine = [s for s in samples if s.task == name]
        tasks.append(
            TaskData(
                task=name,
                sessions=len({s.session_id for s in mine}),
                samples=len(mine),
                solutions=len(single_shot_samples(mine)),
                groups=sum(1 for g in grouped if g[0].task == name),
                reward=RewardStats.of([s.reward for s in mine]),
            )
        )
    total = session_count(store)
    trainable = len({s.session_id for s in samples})
    if not samples:
        message = f"no trainable sessions: {total} session(s), none with a usable model answer"
        if excluded:
            message += f" from base model {base_model!r} ({len(excluded)} sample(s) excluded)"
    else:
        message = (
            f"{trainable} trainable session(s), {len(samples)} sample(s) in {len(grouped)} group(s)"
        )
    return DataSummary(
        db=str(store.path),
        sessions_total=total,
        sessions_trainable=trainable,
        samples=len(samples),
        solutions=len(single_shot_samples(samples)),
        parse_failures=sum(1 for s in samples if not s.parsed),
        groups=len(grouped),
        groups_with_signal=sum(1 for g in grouped if len({s.reward for s in g}) > 1),
        samples_with_logprobs=sum(1 for s in samples if s.has_sampler_logprobs),
        models=dict(models),
        base_model=base_model,
        excluded_other_base_model=len(excluded),
        excluded_sessions=len({s.session_id for s in excluded}),
        reward=RewardStats.of([s.reward for s in samples]),
        tasks=tasks,
        message=message,
    )
