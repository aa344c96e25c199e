"""The operators that make a node: draft, debug, improve (whole scripts, in the solve agent's
format the shipped model was trained on), edit (ONE search/replace change of the parent, which
a small model can carry out more often) and crossover (two parents' scripts merged).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ..agent.calls import call_model
from ..agent.grammar import edit_grammar
from ..agent.parsing import ResponseParseError, parse_solve_response, solve_grammar
from ..agent.prompts import score_line, solve_messages
from ..agent.tweak import VALUE_FORMAT, Tweak, apply_value, describe, plan_of, tweak_grammar
from ..events import ParseError, clean_text
from ..llm import ChatModel
from ..search_events import Operator
from ..tasks import Task
from .node import Node

MAX_ATTEMPTS = 2  # a reply that cannot be parsed is asked again once (each call is a step)
EDIT_FORMAT = """Respond in this format exactly (ONE small change; the SEARCH text must be copied \
exactly from the script):
Plan: one sentence
<<<<<<< SEARCH
lines of the current script
=======
the lines that replace them
>>>>>>> REPLACE"""
# A whole script from a grammar (local) model: its scripts that ran were under 400 tokens on
# the bundled tasks; an answer at 2048 was a loop that took a minute and never ran
GRAMMAR_SCRIPT_TOKENS = 1024
_EDIT = re.compile(r"<{5,}\s*SEARCH\s*\n(.*?)\n?={5,}\s*\n(.*?)\n?>{5,}\s*REPLACE", re.S)


class Proposal(BaseModel):
    """What one operator produced: the node's plan and script (or why it produced none)."""

    operator: Operator
    form: str = "whole"
    plan: str = ""
    script: str = ""
    tokens: int = 0
    error: str | None = None


class Context(BaseModel):
    """What every prompt shows: the task, its folder, the memory and the hints in force."""

    problem: str
    submission: str
    preview: str = ""
    memory: str = ""
    hints: list[str] = []
    columns: list[str] = []  # the data's feature columns, for an edit of a list of them
    metric: str = "score"
    higher_is_better: bool = True


def context_of(
    task: Task, preview: str, memory: str, hints: list[str], columns: list[str] | None = None
) -> Context:
    return Context(
        columns=columns or [],
        problem=task.description,
        submission=task.spec.submission.file,
        preview=preview,
        memory=memory,
        hints=hints,
        metric=task.spec.metric.name,
        higher_is_better=task.spec.metric.higher_is_better,
    )


def score_text(ctx: Context, node: Node) -> str:
    return score_line(ctx.metric, node.score or 0.0, ctx.higher_is_better)


def messages_for(
    op: Operator, ctx: Context, parents: list[Node], focus: str | None = None
) -> list[dict[str, str]]:
    """The prompt of one operator on its parents."""
    first = parents[0] if parents else None
    mode = {"draft": "draft", "debug": "debug"}.get(op, "improve")
    msgs = solve_messages(
        problem=ctx.problem,
        submission=ctx.submission,
        mode=mode,
        previous_script=first.script if first else None,
        previous_output=(first.output or first.error or "") if op == "debug" and first else None,
        previous_score=score_text(ctx, first) if first and first.score is not None else None,
        hints=ctx.hints,
        preview=ctx.preview,
    )
    extra: list[str] = []
    if op == "crossover" and len(parents) > 1:
        other = parents[1]
        extra.append(
            f"Another working script ({score_text(ctx, other) if other.score is not None else ''})"
            f":\n```python\n{other.script.strip()}\n```\nCombine the best ideas of both scripts "
            "into one complete script."
        )
    if ctx.memory:
        extra.append(ctx.memory)
    if op == "edit":
        extra.append(f"{describe(focus)}\n{VALUE_FORMAT}" if focus else EDIT_FORMAT)
    if extra:
        msgs[-1]["content"] += "\n\n" + "\n\n".join(extra)
    return msgs


def apply_edit(text: str, script: str) -> tuple[str, str]:
    """(plan, new script) from a SEARCH/REPLACE reply; a SEARCH text not in the script is an
    error the model is told about."""
    match = _EDIT.search(text)
    if match is None:
        raise ResponseParseError("no <<<<<<< SEARCH / ======= / >>>>>>> REPLACE block found")
    old, new = match.group(1), match.group(2)
    if not old.strip():
        raise ResponseParseError("the SEARCH part is empty")
    if old not in script:
        stripped = [ln.strip() for ln in old.splitlines()]
        lines = script.splitlines()
        for i in range(len(lines) - len(stripped) + 1):  # tolerate changed indentation
            if [ln.strip() for ln in lines[i : i + len(stripped)]] == stripped:
                indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
                repl = [indent + ln.strip() if ln.strip() else ln for ln in new.splitlines()]
                merged = lines[:i] + repl + lines[i + len(stripped) :]
                return plan_of(text[: match.start()]), "\n".join(merged) + "\n"
        raise ResponseParseError("the SEARCH text does not occur in the script")
    return plan_of(text[: match.start()]), script.replace(old, new, 1)


def propose(
    model: ChatModel,
    op: Operator,
    ctx: Context,
    parents: list[Node],
    record: Callable[[BaseModel], Any],
    *,
    temperature: float = 0.7,
    max_tokens: int = 2048,
    calls_left: Callable[[], bool] = lambda: True,
    focus: Tweak | None = None,
    node: int | None = None,
) -> Proposal:
    """Ask the model for one node; a reply that cannot be parsed is shown its error and asked
    again (each call counts as a step; `calls_left` says whether the budget allows another).
    `focus`: the setting an edit changes (tweak.py): the model picks its value. `node`: the
    node it writes, named in each call's purpose (`search:<operator>:<node>`), so the answers
    of calls in flight at once are told apart in the store."""
    messages = messages_for(op, ctx, parents, focus)
    grammar = None
    if model.supports_grammar and op == "edit":  # the SEARCH is the parent's own: it applies
        grammar = tweak_grammar(focus, ctx.columns) if focus else edit_grammar(parents[0].script)
        max_tokens = min(max_tokens, 160) if focus else max_tokens
    elif model.supports_grammar:
        grammar = solve_grammar()
        max_tokens = min(max_tokens, GRAMMAR_SCRIPT_TOKENS)
    tokens, error = 0, "no model call"
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if attempt > 1 and not calls_left():
            break
        out = call_model(
            model,
            messages,
            record,
            purpose=f"search:{op}" + (f":{node}" if node is not None else ""),
            grammar=grammar,
            max_tokens=max_tokens,
            temperature=temperature,
        )
        tokens += out.tokens_in + out.tokens_out
        text = clean_text(out.text, limit=None)
        try:
            if op == "edit" and focus is not None:
                plan, script = apply_value(text, parents[0].script, focus)
            elif op == "edit":
                plan, script = apply_edit(text, parents[0].script)
            else:
                plan, script = parse_solve_response(text)
            form = "edit" if op == "edit" else "whole"
            return Proposal(operator=op, form=form, plan=plan, script=script, tokens=tokens)
        except ResponseParseError as exc:
            error = str(exc)
            record(ParseError(error=error, raw=text, attempt=attempt))
            messages = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": f"Your response could not be used: {error}."},
            ]
    form = "edit" if op == "edit" else "whole"
    return Proposal(operator=op, form=form, tokens=tokens, error=error)
