"""`mlagent-train demos`: a task's reference solutions recorded as real sessions of both agents.

The bundled model cannot succeed yet, so RL has no signal; it learns first from
demonstrations. A demonstration here is an ordinary session in the store, executed, validated
and graded like any other, whose model is a script (`reference:<level>`) answering with the
task's reference solution: the solve agent's Draft, and for the research agent a short, real
research trajectory (run the starter the description names, validate, write the reference as
a script, run it, validate, submit) whose plan, fact check and thought quote what the
observations actually said. Sessions of API models and sessions a person steered join the same
data without any of this: `mlagent-train run --recipe sft` reads successful sessions of any model.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel

from mlagent_tui.core.home import Home
from mlagent_tui.core.llm import Completion, Message, TokenCallback, estimate_tokens
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task

from .prompts import solve_response

LEVELS = ("median", "bronze", "silver", "gold")
AGENTS = ("solve", "research")
IMPROVED = "improved.py"
RESEARCH_STEPS = 6
SOLVE_STEPS = 2


class DemoError(ValueError):
    """A demonstration cannot be recorded as asked (bad level, agent, task)."""


def method_of(script: str, task: str) -> str:
    """The reference's own one-line summary (its docstring), without the 'gold reference for
    <task>:' prefix: the plan a person would state."""
    try:
        doc = ast.get_docstring(ast.parse(script)) or ""
    except SyntaxError:
        doc = ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    first = re.sub(rf"^\w+ reference for {re.escape(task)}:\s*", "", first)
    return first.rstrip(".") or "a stronger model on all the usable columns"


def starter_script(task: Task) -> str:
    """The script the task's baseline runs (train.py, evaluate.py ...)."""
    words = shlex.split(task.spec.baseline.command)
    scripts = [w for w in words if w.endswith(".py")]
    return scripts[0] if scripts else "train.py"


class ScriptedModel:
    """A ChatModel whose answers come from a function of the prompt (the last user message),
    named like a model so the store says what ran: `reference:<level>`."""

    supports_grammar = False

    def __init__(self, name: str, answer: Callable[[int, str], str]) -> None:
        self.name = name
        self.answer = answer
        self.calls = 0

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        self.calls += 1
        prompt = messages[-1].content if messages else ""
        text = self.answer(self.calls, prompt)
        if on_token is not None:
            on_token(text)
        return Completion(
            text=text,
            tokens_in=sum(estimate_tokens(m.content) for m in messages),
            tokens_out=estimate_tokens(text),
            finish_reason="stop",
        )


def last_observation(prompt: str) -> str:
    """The newest observation the research agent's prompt shows."""
    blocks = re.findall(r"Observation:\n```\n(.*?)\n```", prompt, flags=re.S)
    return blocks[-1].strip() if blocks else ""


def first_line(text: str, limit: int = 160) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(no output)")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def output_line(observation: str) -> str:
    """The first line a script printed (an Execute Script observation), else the first line."""
    _, sep, output = observation.partition("Here is the output:")
    return first_line(output if sep and output.strip() else observation)


def score_line(observation: str) -> str:
    """The validation result in an observation (the line naming the score), else its first line."""
    for ln in observation.splitlines():
        if re.search(r"score|valid", ln, flags=re.I):
            return first_line(ln)
    return first_line(observation)


def research_answer(task: Task, reference: str, method: str) -> Callable[[int, str], str]:
    """The research agent's six answers, each written after reading the observation before.

    The first runs the starter the description names: it writes a valid submission at once, and
    the first answer is the one a small model learns first (an adapter that learnt only it still
    reaches a valid submission). The text follows the response grammar a local model samples
    under to the character ("Research Plan and Status: 1. ..." on the header's line), so what
    the model imitates is what the grammar lets it write.
    """
    starter, sub = starter_script(task), task.spec.submission.file
    steps = [
        f"Run the starter {starter} (the description names it) to get a valid {sub}",
        "Validate it to get the baseline score",
        f"Write {IMPROVED}: {method}",
        f"Run {IMPROVED}, validate it and submit the better submission",
    ]

    def plan(done: int, notes: dict[int, str]) -> str:
        lines = []
        for i, text in enumerate(steps, start=1):
            status = " - done" if i <= done else (" - **in progress**" if i == done + 1 else "")
            result = f": {notes[i]}" if i in notes else ""
            lines.append(f"{i}. {text}{status}{result}")
        return "\n".join(lines)

    notes: dict[int, str] = {}

    def answer(call: int, prompt: str) -> str:
        obs = last_observation(prompt)
        args: dict[str, str] = {}
        if call == 1:
            r = f"Nothing has been run yet; the description says {starter} writes {sub}."
            done, fact = 0, "None yet: nothing has been run."
            thought = f"Run {starter} to get a first valid submission and see its output."
            action, args = "Execute Script", {"script_name": starter}
        elif call == 2:
            notes[1] = output_line(obs)
            r = f"{starter} ran and printed: {notes[1]}"
            done, fact = 1, f"{starter} ran, confirmed by its output above."
            thought = f"Validate the submission {sub} it wrote to get the baseline score."
            action = "Validate"
        elif call == 3:
            notes[2] = score_line(obs)
            r = f"The baseline's validation result: {notes[2]}"
            done, fact = 2, f"Baseline validation: {notes[2]} (confirmed by Validate)."
            thought = f"Write {IMPROVED} with {method}; it writes {sub} like the baseline."
            action, args = "Write File", {"file_name": IMPROVED, "content": reference}
        elif call == 4:
            r = f"{IMPROVED} is written."
            notes[3] = "written"
            done, fact = 3, f"{IMPROVED} exists (confirmed by Write File)."
            thought = f"Run {IMPROVED}; it overwrites {sub}."
            action, args = "Execute Script", {"script_name": IMPROVED}
        elif call == 5:
            r = f"{IMPROVED} ran and printed: {output_line(obs)}"
            done, fact = 3, f"{IMPROVED} ran, confirmed by its output."
            thought = f"Validate the new {sub} against the baseline's score."
            action = "Validate"
        else:
            notes[4] = score_line(obs)
            r = f"The improved submission's validation result: {notes[4]}"
            done, fact = 4, f"Improved validation: {notes[4]} (confirmed by Validate)."
            thought = "The improved submission is validated; submit it."
            action, args = "Final Answer", {"final_answer": f"{method}; validation {notes[4]}"}
        return (
            f"Reflection: {r}\nResearch Plan and Status: {plan(done, notes)}\n"
            f"Fact Check: {fact}\nThought: {thought}\nAction: {action}\n"
            f"Action Input: {json.dumps(args)}"
        )

    return answer


def solve_answer(task: Task, reference: str, method: str) -> Callable[[int, str], str]:
    """The solve agent's two answers: the Draft copies the starter the prompt shows (it writes a
    valid submission: short, and a pattern that carries to tasks never trained on), the Improve
    step writes the reference. Where the starter is not itself a solution (a game's
    evaluate.py) the Draft is the reference."""
    starter = task.folder / "env" / starter_script(task)
    writes_csv = task.spec.submission.file.endswith(".csv")  # not a game's evaluate.py
    copy = starter.read_text(encoding="utf-8") if writes_csv and starter.is_file() else None
    draft = (
        solve_response(
            "Copy the starter script shown above; it already writes a valid submission.", copy
        )
        if copy
        else solve_response(f"{method}.", reference)
    )
    improve = solve_response(f"Improve on the starter: {method}.", reference)
    return lambda call, _prompt: draft if call == 1 else improve


class DemoResult(BaseModel):
    session_id: str
    task: str
    seed: int
    level: str
    agent: str
    status: str
    valid: bool
    final_score: float | None
    beats_baseline: bool
    medal: str | None
    seconds: float


def beats_baseline(task: Task, score: float | None, valid: bool) -> bool:
    if not valid or score is None:
        return False
    base = task.spec.baseline.score
    return score > base if task.spec.metric.higher_is_better else score < base


def _record(
    home: Home, store: Store, task: Task, seed: int, level: str, agent: str, drafts_only: bool
) -> DemoResult:
    reference = task.references()[level].read_text(encoding="utf-8")
    method = method_of(reference, task.name)
    if agent == "solve":
        model = ScriptedModel(f"reference:{level}", solve_answer(task, reference, method))
        steps = 1 if drafts_only else SOLVE_STEPS
    else:
        model = ScriptedModel(f"reference:{level}", research_answer(task, reference, method))
        steps = RESEARCH_STEPS
    config = SessionConfig(
        task_dir=str(task.folder), model=model.name, agent=agent, max_steps=steps, seed=seed
    )
    started = time.monotonic()
    session = Session.create(home, store, config, model=model)
    session.run()
    row = store.session(session.id) or {}
    valid, score = bool(row.get("valid")), row.get("final_score")
    return DemoResult(
        session_id=session.id,
        task=task.name,
        seed=seed,
        level=level,
        agent=agent,
        status=row.get("status") or "",
        valid=valid,
        final_score=score,
        beats_baseline=beats_baseline(task, score, valid),
        medal=row.get("medal"),
        seconds=round(time.monotonic() - started, 2),
    )


def record_demos(
    home: Home,
    store: Store,
    tasks: Sequence[Task],
    *,
    seeds: Sequence[int] = (0,),
    levels: Sequence[str] = LEVELS,
    agents: Sequence[str] = AGENTS,
    workers: int = 2,
    drafts_only: bool = False,
    on_done: Callable[[DemoResult], Any] | None = None,
) -> tuple[list[DemoResult], list[str]]:
    """Record every (task, seed, level, agent) demonstration; returns them and notes on what was
    skipped (a task without that reference level). `drafts_only`: the solve agent's first step
    alone (the starter copied), the parents an RL run's improve prompts fork, at half the
    executions."""
    if drafts_only and "research" in agents:
        raise DemoError("--drafts-only records the solve agent's Drafts: use --agents solve")
    bad = [lvl for lvl in levels if lvl not in LEVELS]
    if bad:
        raise DemoError(f"unknown level(s) {', '.join(bad)} (levels: {', '.join(LEVELS)})")
    bad = [a for a in agents if a not in AGENTS]
    if bad:
        raise DemoError(f"unknown agent(s) {', '.join(bad)} (agents: solve, research)")
    jobs, notes = [], []
    for task in tasks:
        refs = task.references()
        missing = [lvl for lvl in levels if lvl not in refs]
        if missing:
            notes.append(f"{task.name}: no reference for {', '.join(missing)}; skipped those")
        jobs += [
            (task, seed, lvl, agent)
            for lvl in levels
            if lvl in refs
            for seed in seeds
            for agent in agents
        ]

    def one(job: tuple[Task, int, str, str]) -> DemoResult:
        result = _record(home, store, *job, drafts_only)
        if on_done is not None:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, jobs)), notes


def summary(results: Sequence[DemoResult]) -> dict[str, Any]:
    n = len(results)
    return {
        "sessions": n,
        "valid": sum(r.valid for r in results),
        "beats_baseline": sum(r.beats_baseline for r in results),
        "by_agent": {a: sum(r.agent == a and r.beats_baseline for r in results) for a in AGENTS},
    }


__all__ = [
    "AGENTS",
    "LEVELS",
    "DemoError",
    "DemoResult",
    "ScriptedModel",
    "beats_baseline",
    "method_of",
    "record_demos",
    "research_answer",
    "solve_answer",
    "summary",
]
