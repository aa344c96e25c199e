"""Reading the agents' responses: the research format (six sections) and the solve format.

Models of every size bend the format (bold headers, fenced JSON, trailing commas, a chatty
preamble, a made-up Observation after the action), so the parser accepts all of that. What it
cannot read it rejects with a message written for the model, which sees it on its next step.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, Field

from .grammar import SECTION_HEADERS, response_grammar, response_max_tokens, solve_grammar

__all__ = [
    "SECTION_HEADERS",
    "ParsedResponse",
    "ResponseParseError",
    "canonical_action",
    "parse_response",
    "parse_solve_response",
    "response_grammar",
    "response_max_tokens",
    "solve_grammar",
]


class ResponseParseError(ValueError):
    """The response cannot be read; the message says what to fix, for the model to see."""


class ParsedResponse(BaseModel):
    reflection: str = ""
    plan: str = ""
    fact_check: str = ""
    thought: str = ""
    action: str
    action_input: dict = Field(default_factory=dict)


# Header names as regex, keyed by field; "action_input" before "action" matters only for clarity,
# since a header must be followed by ':' (after optional markdown), which "Action Input" is not.
_NAMES = {
    "reflection": r"reflections?",
    "plan": r"research[ \t]+plan(?:[ \t]+(?:and|&)[ \t]+status)?",
    "fact_check": r"fact[ \t-]*checks?",
    "thought": r"thoughts?",
    "action_input": r"action[ \t_-]*input",
    "action": r"action",
    "observation": r"observation",  # a hallucinated observation ends the Action Input section
}
_LABELS = dict(
    zip(
        ["reflection", "plan", "fact_check", "thought", "action", "action_input"],
        SECTION_HEADERS,
        strict=True,
    )
)
_MARK = r"(?:\*\*|__|\*|_)?"
_HEADER = re.compile(
    rf"^[ \t>]*(?:#{{1,6}}[ \t]*)?{_MARK}[ \t]*"
    rf"(?P<name>{'|'.join(f'(?P<{k}>{v})' for k, v in _NAMES.items())})"
    rf"[ \t]*{_MARK}[ \t]*:[ \t]*{_MARK}[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _sections(text: str) -> dict[str, str]:
    """First occurrence of each header -> its text, up to the next header of any kind. The
    Action Input runs to the end instead: its JSON ends where its braces close, and a string in
    it may hold a line that looks like a header."""
    hits = []
    for m in _HEADER.finditer(text):
        key = next(k for k in _NAMES if m.group(k) is not None)
        hits.append((key, m.start(), m.end()))
    found: dict[str, str] = {}
    for i, (key, _start, end) in enumerate(hits):
        if key in found:
            continue
        stop = hits[i + 1][1] if i + 1 < len(hits) and key != "action_input" else len(text)
        found[key] = text[end:stop]
    return found


def _clean(value: str) -> str:
    """Section text without surrounding blank space or stray markdown/fence lines."""
    lines = [ln for ln in value.strip().splitlines() if not ln.strip().startswith("```")]
    return "\n".join(lines).strip()


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def canonical_action(name: str, known_actions: list[str] | None) -> str:
    """The registered spelling of `name` when one matches ignoring case, spaces and punctuation;
    otherwise `name` unchanged (the action registry reports unknown names)."""
    if known_actions:
        wanted = _norm(name)
        for known in known_actions:
            if _norm(known) == wanted:
                return known
    return name


def _action_name(section: str) -> tuple[str, str]:
    """The action name (first non-empty line, markdown and quotes removed) and the rest."""
    lines = section.strip().splitlines()
    while lines and (not lines[0].strip() or lines[0].strip().startswith("```")):
        lines.pop(0)
    if not lines:
        return "", ""
    first = lines[0].strip()
    rest = "\n".join(lines[1:])
    brace = first.find("{")
    if brace > 0:  # "Action: List Files {"dir_path": "."}"
        first, rest = first[:brace], first[brace:] + "\n" + rest
    name = first.strip().strip("`*_\"' ").rstrip(".:").strip()
    return name, rest


def _json_object_span(text: str, start: int) -> str | None:
    """The text of the balanced {...} starting at `start` (strings respected), or None."""
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _strip_trailing_commas(text: str) -> str:
    """Drop commas before } or ] outside strings."""
    out, in_str, esc = [], False, False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == ",":
            m = _TRAILING_COMMA.match(text, i)
            if m:
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_action_input(section: str) -> dict:
    """The JSON object of an Action Input section; text around it (fences, notes) is ignored."""
    body = section.strip()
    if not body:
        raise ResponseParseError(
            "Action Input is empty: write a JSON object after 'Action Input:' (use {} for none)"
        )
    start = body.find("{")
    if start < 0:
        try:
            value = json.loads(body.strip("`").removeprefix("json").strip(), strict=False)
        except (ValueError, RecursionError):
            raise ResponseParseError(
                "Action Input is not valid JSON: expected a JSON object starting with '{'"
            ) from None
        raise ResponseParseError(
            f"Action Input must be a JSON object, got {type(value).__name__}: {body[:80]}"
        )
    prefix = body[:start].strip().strip("`").removeprefix("json").strip()
    if prefix.startswith("["):
        raise ResponseParseError("Action Input must be a JSON object, got a list")
    span = _json_object_span(body, start)
    if span is None:
        raise ResponseParseError(
            "Action Input is not valid JSON: the object is not closed with '}'"
        )
    try:
        value = json.loads(_strip_trailing_commas(span), strict=False)
    except ValueError as exc:  # JSONDecodeError, or a number with too many digits
        raise ResponseParseError(f"Action Input is not valid JSON: {str(exc)[:300]}") from None
    except RecursionError:
        value = None
    if value is None or _nesting(value) > MAX_INPUT_NESTING:
        raise ResponseParseError(
            f"Action Input is nested too deeply (at most {MAX_INPUT_NESTING} levels)"
        )
    if not isinstance(value, dict):  # pragma: no cover - a span starting with '{' is an object
        raise ResponseParseError("Action Input must be a JSON object")
    return value


MAX_INPUT_NESTING = 20


def _nesting(value: object, depth: int = 0) -> int:
    """How deeply lists and objects nest (stops counting past the limit)."""
    if depth > MAX_INPUT_NESTING or not isinstance(value, dict | list):
        return depth
    children = value.values() if isinstance(value, dict) else value
    return max((_nesting(v, depth + 1) for v in children), default=depth + 1)


def parse_response(text: str, known_actions: list[str] | None = None) -> ParsedResponse:
    """Read a research-agent response. Raises ResponseParseError with a message for the model."""
    if not text or not text.strip():
        raise ResponseParseError("empty response")
    found = _sections(text)
    if "action" not in found:
        raise ResponseParseError(
            "no 'Action:' line found: end your response with 'Action: <action name>' and "
            "'Action Input: {...}' (a JSON object)"
        )
    name, rest = _action_name(found["action"])
    if not name:
        raise ResponseParseError("the 'Action:' line has no action name")
    if "action_input" in found:
        action_input = parse_action_input(found["action_input"])
    elif "{" in rest:
        action_input = parse_action_input(rest)
    else:
        raise ResponseParseError(
            "no 'Action Input:' line found: after the Action line write "
            "'Action Input: {...}' with a JSON object ({} if the action takes no input)"
        )
    missing = [
        _LABELS[k] for k in ("reflection", "plan", "fact_check", "thought") if k not in found
    ]
    if missing:
        raise ResponseParseError(
            "missing section(s): "
            + ", ".join(f"'{m}:'" for m in missing)
            + "; every response has Reflection, Research Plan and Status, Fact Check, Thought, "
            "Action and Action Input, in that order"
        )
    return ParsedResponse(
        reflection=_clean(found["reflection"]),
        plan=_clean(found["plan"]),
        fact_check=_clean(found["fact_check"]),
        thought=_clean(found["thought"]),
        action=canonical_action(name, known_actions),
        action_input=action_input,
    )


_PLAN = re.compile(r"^[ \t#>*_]*plan[ \t*_]*:[ \t*_]*", re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*$", re.MULTILINE)


def parse_solve_response(text: str) -> tuple[str, str]:
    """Read a solve response: `Plan: ...` then one ```python block. Returns (plan, script).

    Tolerates a missing language tag, a missing closing fence (a truncated answer) and a missing
    "Plan:" header (the text before the block is the plan). When several blocks are present the
    first Python one wins.
    """
    if not text or not text.strip():
        raise ResponseParseError("empty response")
    fences = list(_FENCE.finditer(text))
    if not fences:
        raise ResponseParseError(
            "no code block found: after 'Plan: ...' write the complete script in one "
            "```python ... ``` block"
        )
    opener = next(
        (f for f in fences if f.group(1).lower() in ("python", "py", "python3")), fences[0]
    )
    after = [f for f in fences if f.start() > opener.end()]
    end = after[0].start() if after else len(text)
    script = text[opener.end() : end].strip("\n")
    if not script.strip():
        raise ResponseParseError("the ```python block is empty: put the complete script inside it")
    head = text[: fences[0].start()]
    plan_match = _PLAN.search(head)
    plan = head[plan_match.end() :] if plan_match else head
    return plan.strip(), script.rstrip() + "\n"
