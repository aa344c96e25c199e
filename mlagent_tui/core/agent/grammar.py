"""GBNF grammars (llama.cpp syntax) that force the agents' response formats on a local model.

A small model left free rambles, forgets a section, or writes an Action Input with the wrong
fields. The research grammar fixes the six sections in order, bounds every free-text section and
every JSON string (so the Action always comes, even when the model falls into a loop), allows only
the registered action names and, for each, exactly that action's JSON fields. Everything it allows,
`parse_response` accepts. `response_max_tokens` is the longest response the grammar permits: with
max_tokens at least that, a grammar-constrained answer always completes.
"""

from __future__ import annotations

import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

SECTION_HEADERS = (
    "Reflection",
    "Research Plan and Status",
    "Fact Check",
    "Thought",
    "Action",
    "Action Input",
)

# Fields that hold a name or a path get the short bound; other strings the long one.
_NAME_FIELD = re.compile(r"(name|path|file|dir|source|destination)$", re.IGNORECASE)
_WS_MAX = 9  # "\n" plus up to 8 spaces or tabs

# Shared rules. `ws` allows one optional newline plus indentation, never unbounded blank space.
# Strings have no \u escapes (raw unicode is allowed), so each unit is at most two characters.
_COMMON = r"""
line ::= [^\n]
plan-char ::= [^\n] | "\n" [0-9-]
ws ::= ([ ] | "\n" [ \t]{0,8})?
str-char ::= [^"\\\x00-\x1f] | "\\" ["\\/bfnrt]
integer ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
"""
_INT_MAX, _NUM_MAX = 17, 17 + 16 + 5


def gbnf_literal(text: str) -> str:
    """A GBNF string literal for `text` (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass
class _Builder:
    """Collects the string rules of each length bound and the longest text of each expression."""

    max_value_chars: int
    max_name_chars: int
    strings: dict[int, str] = field(default_factory=dict)

    def string(self, limit: int) -> tuple[str, int]:
        limit = max(1, limit)
        name = f"string-{limit}"
        self.strings[limit] = f'{name} ::= "\\"" str-char{{0,{limit}}} "\\""'
        return name, 2 + 2 * limit

    def value(self, annotation: Any, limit: int) -> tuple[str, int]:
        """(grammar expression, most characters it can produce) for one field's type."""
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if annotation is str:
            return self.string(limit)
        if annotation is bool:
            return "boolean", 5
        if annotation is int:
            return "integer", _INT_MAX
        if annotation is float:
            return "number", _NUM_MAX
        if origin is Literal:
            options = [json.dumps(a) for a in args]
            return "(" + " | ".join(map(gbnf_literal, options)) + ")", max(map(len, options))
        if origin in (Union, types.UnionType):
            parts = [("null", 4) if a is type(None) else self.value(a, limit) for a in args]
            return "(" + " | ".join(p for p, _ in parts) + ")", max(n for _, n in parts)
        if origin is typing.Annotated:
            return self.value(args[0], limit)
        if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set):
            item, size = self.value(args[0] if args else str, limit)
            expr = f'("[" ws ({item} (ws "," ws {item}){{0,15}})? ws "]")'
            return expr, 2 + 2 * _WS_MAX + 16 * (size + 2 * _WS_MAX + 1)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            expr, size = self.object(annotation)
            return "(" + expr + ")", size
        # dict / Any / anything else: a JSON string, the one value every handler can take
        return self.string(limit)

    def limit(self, name: str, info: FieldInfo) -> int:
        for meta in info.metadata:
            if getattr(meta, "max_length", None):
                return int(meta.max_length)
        return self.max_name_chars if _NAME_FIELD.search(name) else self.max_value_chars

    def object(self, model: type[BaseModel]) -> tuple[str, int]:
        """`{"a": <type>, "b": <type>}` with every field of the model, in declaration order."""
        fields = list(model.model_fields.items())
        if not fields:
            return '"{" ws "}"', 2 + _WS_MAX
        parts, size = [], 2
        for i, (name, info) in enumerate(fields):
            key = json.dumps(info.alias or name)
            expr, most = self.value(info.annotation, self.limit(name, info))
            sep = "" if i == 0 else '"," ws '
            parts.append(f'{sep}{gbnf_literal(key)} ws ":" ws {expr} ws')
            size += len(key) + 2 + 4 * _WS_MAX + most
        return '"{" ws ' + " ".join(parts) + ' "}"', size


def _research_parts(
    actions: list[tuple[str, type[BaseModel]]],
    max_section_chars: int,
    max_value_chars: int,
    max_name_chars: int,
) -> tuple[list[str], _Builder, int]:
    if not actions:
        raise ValueError("response_grammar needs at least one action")
    n = max(1, int(max_section_chars))
    builder = _Builder(max(1, int(max_value_chars)), max(1, int(max_name_chars)))
    rules = [
        'root ::= "Reflection: " sec-line "\\n" "Research Plan and Status: " sec-plan "\\n" '
        '"Fact Check: " sec-line "\\n" "Thought: " sec-line "\\n" "Action: " action',
        f"sec-line ::= line{{1,{n}}}",
        f"sec-plan ::= plan-char{{1,{n}}}",
        "action ::= " + " | ".join(f"act-{i}" for i in range(len(actions))),
    ]
    longest_action = 0
    for i, (name, model) in enumerate(actions):
        if "\n" in name or not name.strip():
            raise ValueError(f"action name must be one non-empty line: {name!r}")
        expr, size = builder.object(model)
        rules.append(f'act-{i} ::= {gbnf_literal(name)} "\\nAction Input: " {expr}')
        longest_action = max(longest_action, len(name) + 15 + size)
    headers = sum(len(h) + 3 for h in SECTION_HEADERS)
    most = headers + 3 * n + 2 * n + longest_action
    return rules, builder, most


def response_grammar(
    actions: list[tuple[str, type[BaseModel]]],
    max_section_chars: int = 600,
    max_value_chars: int = 800,
    max_name_chars: int = 100,
) -> str:
    """The research agent's grammar: six sections in order, bounded text, one of `actions`.

    Reflection, Fact Check and Thought are single lines; the Research Plan may go on over lines
    that start with a digit or "-", so no plan line can look like a header. JSON strings are
    bounded: `max_name_chars` for fields named like a file, path or name, `max_value_chars` for
    other text, and a field's own `Field(max_length=...)` wins over both.
    """
    rules, builder, _ = _research_parts(actions, max_section_chars, max_value_chars, max_name_chars)
    strings = [builder.strings[k] for k in sorted(builder.strings)]
    return "\n".join(rules + strings) + "\n" + _COMMON.strip() + "\n"


def response_max_tokens(
    actions: list[tuple[str, type[BaseModel]]],
    max_section_chars: int = 600,
    max_value_chars: int = 800,
    max_name_chars: int = 100,
) -> int:
    """The longest response (in characters, so also in tokens: llama.cpp's grammar never accepts
    an empty token) that `response_grammar` with the same arguments allows."""
    return _research_parts(actions, max_section_chars, max_value_chars, max_name_chars)[2]


def solve_grammar(max_plan_chars: int = 400, max_plan_lines: int = 6) -> str:
    """The "solve" agent's grammar: `Plan: ...` then one ```python block with the whole script.

    The script itself is unbounded here (max_tokens bounds it); it only may not contain ```.
    """
    n = max(1, int(max_plan_chars))
    extra = max(0, int(max_plan_lines) - 1)
    return (
        f'root ::= "Plan: " plan-line ("\\n" plan-line){{0,{extra}}} "\\n\\n```python\\n" code\n'
        f"plan-line ::= [^\\n`] [^\\n`]{{0,{n - 1}}}\n"
        'code ::= ([^`] | "`" [^`] | "``" [^`])* "\\n```"\n'
    )


def edit_grammar(script: str, max_lines: int = 8, max_plan_chars: int = 300) -> str | None:
    """The search's edit operator: `Plan: ...`, then ONE SEARCH/REPLACE block whose SEARCH is
    one line of `script` as it stands (so it always applies) and whose REPLACE is 1 to
    `max_lines` lines. None where the script has no line to choose."""
    lines = list(dict.fromkeys(ln for ln in script.splitlines() if ln.strip()))
    if not lines:
        return None
    n = max(1, int(max_plan_chars))
    choices = " | ".join(gbnf_literal(ln) for ln in lines)
    return (
        f'root ::= "Plan: " plan "\\n<<<<<<< SEARCH\\n" old "\\n=======\\n" new{{1,{max_lines}}}'
        ' ">>>>>>> REPLACE"\n'
        f"plan ::= [^\\n] [^\\n]{{0,{n - 1}}}\n"
        f"old ::= {choices}\n"
        'new ::= [^>\\n] [^\\n]* "\\n" | "\\n"\n'
    )
