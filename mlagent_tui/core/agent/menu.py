"""The solve agent's edit as a choice: the model names which setting of its best script to
change, by its number in a menu, and then the setting's new value (tweak.py).

With the setting drawn at random, the model's part was the value alone, and two models told
apart by training chose the same few values: 44 of 48 paired sessions ended the same. Which
setting to change holds most of what a search learns about a task (a model swap helps on one
task, a regularisation strength on another), so the model makes that choice, and distillation
teaches it from the settings whose change beat its parent in a search.
"""

from __future__ import annotations

import re

from .parsing import ResponseParseError
from .tweak import (
    Tweak,
    apply_value,
    describe,
    list_parts,
    open_tweaks,
    options,
    value_match,
    value_rule,
)

MAX_MENU = 8  # settings one menu offers: every model swap, then the first others in the script
MENU_FORMAT = (
    "Respond in this format exactly:\nSetting: the number of the setting to change\n"
    "Plan: one sentence\nValue: the new value"
)
_SETTING = re.compile(r"^\s*setting\s*:\s*(\d+)", re.I | re.M)


def menu_of(script: str, vocab: list[str], siblings: list[str] | None = None) -> list[Tweak]:
    """The settings of `script` with a value left to try, in the script's order; past
    MAX_MENU, the model swaps and the first others."""
    found = open_tweaks(script, vocab, siblings)
    models = [i for i, t in enumerate(found) if t.kind == "model"]
    others = [i for i, t in enumerate(found) if t.kind != "model"]
    keep = sorted(models[:MAX_MENU] + others[: max(0, MAX_MENU - len(models))])
    return [found[i] for i in keep]


def menu_text(menu: list[Tweak]) -> str:
    """The menu as the prompt shows it, then the answer's format."""
    lines = ["The settings you may change (choose one by its number):"]
    for n, tweak in enumerate(menu, 1):
        lines.append(f"{n}. " + describe(tweak).replace("\n", "\n   "))
    return "\n".join(lines) + "\n" + MENU_FORMAT


def with_menu(messages: list[dict[str, str]], menu: list[Tweak]) -> list[dict[str, str]]:
    """An improve prompt with the menu after its last message (the solve agent's and
    distillation's, which a test holds equal)."""
    out = [dict(m) for m in messages]
    out[-1]["content"] += f"\n\n{menu_text(menu)}"
    return out


def menu_grammar(menu: list[Tweak], vocab: list[str], max_plan_chars: int = 200) -> str:
    """`Setting: <n>` then `Plan: ...` and `Value: <one of setting n's values>`."""
    n = max(1, int(max_plan_chars))
    picks = " | ".join(f'"{i}" v{i}' for i in range(1, len(menu) + 1))
    rules = [f'root ::= "Setting: " ({picks})', f"plan ::= [^\\n] [^\\n]{{0,{n - 1}}}"]
    for i, tweak in enumerate(menu, 1):
        rules.append(f'v{i} ::= "\\nPlan: " plan "\\nValue: " v{i}-value')
        rules.append(value_rule(tweak, vocab, f"v{i}-value"))
    return "\n".join(rules) + "\n"


def chosen(text: str, menu: list[Tweak], vocab: list[str]) -> Tweak:
    """The setting a reply names: by its `Setting: n` line, or without one (a model with no
    grammar) the first setting the value can belong to."""
    match = _SETTING.search(text)
    if match is not None:
        n = int(match.group(1))
        if not 1 <= n <= len(menu):
            raise ResponseParseError(f"Setting {n} is not in the list (1 to {len(menu)})")
        return menu[n - 1]
    try:
        value = value_match(text).group(1)
    except ResponseParseError:
        raise ResponseParseError("no 'Setting: N' line found") from None
    for tweak in menu:
        if tweak.kind == "names":
            if value.startswith(list_parts(tweak)[1]) and value.endswith("]"):
                return tweak
        elif value in options(tweak, vocab):
            return tweak
    raise ResponseParseError("no 'Setting: N' line found")


def apply_choice(
    text: str, script: str, menu: list[Tweak], vocab: list[str]
) -> tuple[str, str, Tweak]:
    """(plan, new script, the setting changed) from a `Setting/Plan/Value` reply."""
    tweak = chosen(text, menu, vocab)
    plan, new = apply_value(text, script, tweak)
    return plan, new, tweak


def choice_answer(menu: list[Tweak], focus: Tweak, answer: str) -> str | None:
    """`answer` (a `Plan/Value` reply to `focus`) as a reply to the menu (None: the setting
    is not in it)."""
    place = [(t.line, t.start, t.end, t.kind) for t in menu]
    key = (focus.line, focus.start, focus.end, focus.kind)
    if key not in place:
        return None
    return f"Setting: {place.index(key) + 1}\n{answer}"
