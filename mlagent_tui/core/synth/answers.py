"""A role's JSON answer: pull the object out of the text, validate it, re-ask on a bad one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..llm import ChatModel, Message

JSON_TRIES = 3
FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)

T = TypeVar("T", bound=BaseModel)

# Any JSON object, in llama.cpp's GBNF: a local model that supports grammars cannot answer
# with prose or broken JSON; the schema is still checked (and re-asked) after parsing.
JSON_OBJECT_GBNF = r"""
root ::= object
object ::= "{" ws (member ("," ws member)*)? "}" ws
member ::= string ":" ws value
value ::= object | array | string | number | ("true" | "false" | "null") ws
array ::= "[" ws (value ("," ws value)*)? "]" ws
string ::= "\"" char* "\"" ws
char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? ws
ws ::= ([ ] | "\n" [ ]{0,8})?
"""
Check = Callable[[Any], list[str]]


class AnswerError(ValueError):
    """The text holds no JSON object the schema accepts; the message is shown to the model."""


def extract_json(text: str) -> Any:
    """The JSON object of an answer: a fenced block first, else the outermost braces."""
    candidates = [m.group(1) for m in FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    if not candidates:
        raise AnswerError("no JSON object found in the answer")
    error = ""
    for raw in candidates:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            error = f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            continue
        if isinstance(value, dict):
            return value
        error = f"expected a JSON object, got {type(value).__name__}"
    raise AnswerError(error)


def parse_answer(text: str, schema: type[T], check: Check | None = None) -> T:
    """Validate the answer against `schema`, then the semantic `check` (a list of problems)."""
    data = extract_json(text)
    try:
        answer = schema.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()[:12]
        ]
        raise AnswerError("schema validation failed: " + "; ".join(problems)) from None
    if check is not None:
        problems = check(answer)
        if problems:
            raise AnswerError("; ".join(problems))
    return answer


def schema_hint(schema: type[BaseModel]) -> str:
    return json.dumps(schema.model_json_schema(), separators=(",", ":"))


class Conversation:
    """One role's chat with the model; every call is counted for the report."""

    def __init__(
        self,
        model: ChatModel,
        system: str,
        *,
        max_tokens: int = 4096,
        temperature: float = 0.7,
        on_call: Callable[[], None] | None = None,
        on_reject: Callable[[str], None] | None = None,
    ) -> None:
        self.model = model
        self.messages = [Message(role="system", content=system)]
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.calls = 0
        self.on_call = on_call
        # Each rejection is reported as it happens: a model error on the next try must not
        # take the earlier reasons with it.
        self.on_reject = on_reject

    def ask(
        self, prompt: str, schema: type[T], check: Check | None = None, tries: int = JSON_TRIES
    ) -> tuple[T | None, list[str]]:
        """Up to `tries` answers; each invalid one is sent back with its error.

        Returns the first valid answer (or None) and the errors of the invalid ones; a
        `ModelError` of the model propagates (the rejections before it went to `on_reject`).
        """
        errors: list[str] = []
        self.messages.append(Message(role="user", content=prompt))
        for _ in range(tries):
            completion = self.model.complete(
                self.messages,
                grammar=JSON_OBJECT_GBNF if self.model.supports_grammar else None,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
            self.calls += 1
            if self.on_call:
                self.on_call()
            self.messages.append(Message(role="assistant", content=completion.text))
            try:
                return parse_answer(completion.text, schema, check), errors
            except AnswerError as exc:
                errors.append(str(exc))
                if self.on_reject:
                    self.on_reject(str(exc))
                self.messages.append(
                    Message(
                        role="user",
                        content=f"Your answer was rejected: {exc}\nAnswer again with the "
                        "complete JSON object.",
                    )
                )
        return None, errors
