"""The leak judge: the model reads a description beside the hidden rule and says whether the
description gives the rule away.

The number check (`checks.leak_problem`) is the floor: it sees the rule's formula, terms and
coefficients verbatim but not the rule in other words ("seedlings survive when the soil is wet").
The judge sees meaning. Its verdict is parsed strictly (a JSON bool, no extra fields, a quote
that is really in the description) and re-asked when it is not; no valid verdict is no clearance.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from ..llm import ChatModel
from .answers import Conversation
from .report import RoleLog
from .roles import TaskSpecDraft

JUDGE = """You review task descriptions for a machine-learning benchmark. The data of each task
was generated from a hidden rule that the agent must discover from the data alone. You are
shown the hidden rule and the description the agent reads. Decide whether the description
gives the rule away: its formula, its coefficients or thresholds, or in words which features
drive the target, which do not matter, or in which direction they act. Naming and describing
the files, the columns, the target, the metric and the submission format is NOT a leak.

Answer with one JSON object only, with exactly these two fields:
{"leaks": true or false, "quote": "the sentence of the description that gives the rule away,
copied exactly; an empty string when leaks is false"}"""


class LeakVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    leaks: StrictBool
    quote: StrictStr = Field(default="", max_length=4000)


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[*_`]+", " ", text).lower().split())


def _quote_problems(verdict: LeakVerdict, description: str) -> list[str]:
    quote = verdict.quote.strip()
    if verdict.leaks and quote and _flat(quote) not in _flat(description):
        return [
            f"the quote {quote[:120]!r} is not in the description: copy the sentence exactly, "
            "or answer leaks false"
        ]
    return []


def judge_leak(
    model: ChatModel,
    description: str,
    spec: TaskSpecDraft,
    *,
    log: RoleLog | None = None,
    temperature: float = 0.0,
) -> str | None:
    """Why the description leaks the hidden rule, by the model's judgement; None when it does not.

    A `ModelError` propagates: a judge that could not answer has cleared nothing."""
    role = log or RoleLog()
    chat = Conversation(
        model,
        JUDGE,
        max_tokens=512,
        temperature=temperature,
        on_call=lambda: setattr(role, "calls", role.calls + 1),
        on_reject=role.json_errors.append,
    )
    features = ", ".join(f.name for f in spec.features)
    prompt = (
        f"Hidden rule (formula): {spec.hidden_rule}\nHidden rule (in words): {spec.rule_text}\n"
        f"Features: {features}; target: {spec.target}.\n\n"
        f"The description the agent reads:\n<<<\n{description.strip()}\n>>>\n\n"
        "Does the description give the hidden rule away?"
    )
    verdict, errors = chat.ask(prompt, LeakVerdict, check=lambda v: _quote_problems(v, description))
    if verdict is None:
        return f"the leak judge gave no valid verdict in {len(errors)} tries: {errors[-1][:200]}"
    if not verdict.leaks:
        return None
    quote = " ".join(verdict.quote.split())
    return "the hidden rule, judged by the model" + (f": {quote[:200]!r}" if quote else "")
