"""GBNF grammars (llama.cpp syntax) that force the agents' response formats on a local model.

A small model left free rambles, forgets a section, or writes an Action Input with the wrong
fields. The research grammar fixes the six sections in order, bounds every free-text section (so
the Action always comes within a few hundred tokens), allows only the registered action names and,
for each one, exactly that action's JSON fields. Everything it allows, `parse_response` accepts.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal, Union

from pydantic import BaseModel

SECTION_HEADERS = (
    "Reflection",
    "Research Plan and Status",
    "Fact Check",
    "Thought",
    "Action",
    "Action Input",
)

# Shared rules. `ws` allows one optional newline plus indentation, never unbounded blank space.
_COMMON = r"""
line ::= [^\n]
plan-char ::= [^\n] | "\n" [ ]{0,6} ([0-9] | "- ")
ws ::= ([ ] | "\n" [ \t]{0,8})?
string ::= "\"" str-char{0,MAXV} "\""
str-char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= string | number | boolean | null | array | object
array ::= "[" ws (value (ws "," ws value){0,63})? ws "]"
object ::= "{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value){0,31})? ws "}"
"""


def gbnf_literal(text: str) -> str:
    """A GBNF string literal for `text` (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _type_rule(annotation: Any) -> str:
    """The grammar expression for one field's type; unknown types fall back to any JSON value."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is str:
        return "string"
    if annotation is bool:
        return "boolean"
    if annotation is int:
        return "integer"
    if annotation is float:
        return "number"
    if origin is Literal:
        return "(" + " | ".join(gbnf_literal(json.dumps(a)) for a in args) + ")"
    if origin in (Union, types.UnionType):
        return "(" + " | ".join("null" if a is type(None) else _type_rule(a) for a in args) + ")"
    if origin in (list, tuple, set, frozenset) and args:
        item = _type_rule(args[0])
        return f'("[" ws ({item} (ws "," ws {item}){{0,63}})? ws "]")'
    if origin is typing.Annotated:
        return _type_rule(args[0])
    if origin is dict or annotation is dict:
        return "object"
    if origin is list or annotation is list:
        return "array"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "(" + _object_rule(annotation) + ")"
    return "value"


def _object_rule(model: type[BaseModel]) -> str:
    """`{"a": <type>, "b": <type>}` with every field of the model, in declaration order."""
    fields = list(model.model_fields.items())
    if not fields:
        return '"{" ws "}"'
    parts = []
    for i, (name, info) in enumerate(fields):
        key = gbnf_literal(json.dumps(info.alias or name))
        sep = "" if i == 0 else '"," ws '
        parts.append(f"{sep}{key} ws \":\" ws {_type_rule(info.annotation)} ws")
    return '"{" ws ' + " ".join(parts) + ' "}"'


def response_grammar(
    actions: list[tuple[str, type[BaseModel]]],
    max_section_chars: int = 600,
    max_value_chars: int = 1500,
) -> str:
    """The research agent's grammar: six sections in order, bounded text, one of `actions`.

    Reflection, Fact Check and Thought are single lines; the Research Plan may continue on lines
    that start (after indentation) with a digit or "- ", so no plan line can look like a header.
    """
    if not actions:
        raise ValueError("response_grammar needs at least one action")
    n = max(1, int(max_section_chars))
    rules = [
        'root ::= "Reflection: " sec-line "\\n" "Research Plan and Status: " sec-plan "\\n" '
        '"Fact Check: " sec-line "\\n" "Thought: " sec-line "\\n" "Action: " action',
        f"sec-line ::= line{{1,{n}}}",
        f"sec-plan ::= plan-char{{1,{n}}}",
        "action ::= " + " | ".join(f"act-{i}" for i in range(len(actions))),
    ]
    for i, (name, model) in enumerate(actions):
        if "\n" in name or not name.strip():
            raise ValueError(f"action name must be one non-empty line: {name!r}")
        rules.append(f'act-{i} ::= {gbnf_literal(name)} "\\nAction Input: " {_object_rule(model)}')
    common = _COMMON.replace("MAXV", str(max(1, int(max_value_chars))))
    return "\n".join(rules) + "\n" + common.strip() + "\n"


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
