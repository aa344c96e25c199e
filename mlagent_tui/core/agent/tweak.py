"""The edit a small model can carry out: the search picks one setting of the parent (a number,
a list of column names, or the scikit-learn model it fits) and the model chooses its new value
among a few, under a grammar; the harness writes the change (estimators.py: a model swap).

A 135M model asked for a free SEARCH/REPLACE block copies the script's first line or writes
prose (0 of 4 applied on breast-cancer); asked to write the line again with its settings free,
it wrote the same values back (2 of 2) and spent 40 s forcing the fixed text through the
grammar. Choosing only the value keeps every edit a real change that applies, in a few tokens.
Where the parent has no such setting the operator falls back to a free edit.
"""

from __future__ import annotations

import csv
import io
import random
import re
import tokenize
from pathlib import Path

from pydantic import BaseModel

from ..workspace import fs
from .estimators import TAKE_GAPS, alternatives, family, swap
from .grammar import gbnf_literal
from .parsing import ResponseParseError

MAX_COLUMNS = 40  # of a data header offered to a list of column names
MAX_ADDED = 10  # columns one edit may add to a list
FACTORS = (0.1, 0.5, 2.0, 10.0)  # a number's alternatives: the value times these
MODEL_WEIGHT = 2  # a model swap's weight in the pick, against 1 for each other setting
# keyword arguments whose number changes no submission: a seed, a log level, the threads, the
# share held out for a printed check (the final model is fit on all the data)
MAX_CSV_HEAD_BYTES = 1 << 20  # of each data file read for its header and sample rows
SAMPLE_ROWS = 500  # of train.csv read to tell a numeric column from a text one
MISSING = frozenset({"", "nan", "na", "n/a", "null", "none"})  # what pandas reads as missing
NO_EFFECT = frozenset({"random_state", "seed", "random_seed", "verbose", "n_jobs", "test_size"})
VALUE_FORMAT = "Respond in this format exactly:\nPlan: one sentence\nValue: the new value"
_VALUE = re.compile(r"^\s*value\s*:\s*(.+?)\s*$", re.I | re.M)
_PLAN = re.compile(r"plan\s*:", re.I)


class Columns(list[str]):
    """The columns an edit may add to a list, in the data's order; `gaps`: those with missing
    values, offered only to estimators that take them (a linear model only fails on them)."""

    gaps: frozenset[str] = frozenset()


class Tweak(BaseModel):
    """One setting of a parent's script: `line` as it stands, the span [start, end) in it."""

    line: str
    start: int
    end: int
    kind: str  # "num" | "names" | "model"
    tried: list[str] = []  # values (numbers, models, added columns) a sibling already holds
    arg: str = ""  # a keyword argument's name (`C` in `C=0.1`) or a scaling's `/` or `*`
    barred: list[str] = []  # values that would break the script: columns with gaps for a
    # model that takes none, or a model that takes none where a list holds such a column

    @property
    def text(self) -> str:
        return self.line[self.start : self.end]


def _head(folder: Path, name: str) -> str | None:
    """The start of a CSV of the workspace, read no-follow, regular files only, bounded."""
    return fs.read_head(folder, name, MAX_CSV_HEAD_BYTES)


def _header(text: str | None) -> list[str] | None:
    if text is None:
        return None
    try:
        return next(csv.reader(io.StringIO(text, newline="")), [])
    except csv.Error:
        return []


def _numeric(text: str | None, rows: int = SAMPLE_ROWS) -> tuple[set[str], set[str]]:
    """The columns of a CSV whose values in its first `rows` rows are all numbers or missing
    (what a scikit-learn model takes without encoding: a text column only breaks the script),
    and the columns with a missing value among them."""
    if text is None:
        return set(), set()
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, [])
        bad: set[int] = set()
        gaps: set[int] = set()
        for n, row in enumerate(reader):
            if n >= rows:
                break
            for i, cell in enumerate(row[: len(header)]):
                if cell.strip().lower() in MISSING:
                    gaps.add(i)
                elif i not in bad:
                    try:
                        float(cell)
                    except ValueError:
                        bad.add(i)
    except csv.Error:
        return set(), set()
    numeric = {c for i, c in enumerate(header) if i not in bad}
    return numeric, {c for i, c in enumerate(header) if i in gaps}


def columns_of(folder: Path) -> Columns:
    """The features a list of column names may hold: train.csv's numeric columns that
    test.csv has too (so never the answer), less the id and the submission's own columns."""
    train_text = _head(folder, "train.csv")
    train = _header(train_text) or []
    test = _header(_head(folder, "test.csv"))
    answer = set(_header(_head(folder, "sample_submission.csv")) or []) | {"id"}
    numeric, gaps = _numeric(train_text)
    keep = [
        c for c in train if c and c not in answer and c in numeric and (test is None or c in test)
    ]
    out = Columns(keep[:MAX_COLUMNS])
    out.gaps = frozenset(gaps & set(out))
    return out


def _models_in(toks: list[tokenize.TokenInfo]) -> set[str]:
    """The known estimators the script calls."""
    return {
        t.string
        for i, t in enumerate(toks[:-1])
        if t.type == tokenize.NAME and family(t.string) is not None and toks[i + 1].string == "("
    }


def _barred(kind: str, name: str, script: str, models: set[str], vocab: list[str]) -> list[str]:
    """What a setting may not become (see Tweak.barred); nothing where the script calls no
    known estimator or fills gaps itself (an imputer, `fillna`)."""
    gaps = sorted(getattr(vocab, "gaps", ()), key=vocab.index)
    if not gaps or "Imputer(" in script or ".fillna(" in script:
        return []
    if kind == "names" and models and not models <= TAKE_GAPS:
        return gaps
    if kind == "model" and any(_listed(c, script) for c in gaps):
        return [m for m in alternatives(name) if m not in TAKE_GAPS]
    return []


def tweaks_of(script: str, vocab: list[str]) -> list[Tweak]:
    """Every setting in the parent's code (not in its strings or comments) an edit may change:
    numbers, one-line lists of string literals that are all columns, with one left to add, and
    the first call of each known estimator (a swap changes all its calls). A line that appears
    twice is left alone (the change would be ambiguous)."""
    lines = script.splitlines()
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(script).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    out: list[Tweak] = []
    models: set[str] = set()
    called = _models_in(toks)
    args: set[tuple[str, str]] = set()
    for i, tok in enumerate(toks):
        row, col = tok.start
        if row > len(lines) or lines.count(lines[row - 1]) > 1:
            continue
        line = lines[row - 1]
        if tok.type == tokenize.NUMBER and tok.string.replace(".", "", 1).isdigit():
            arg = _tie(toks, i)
            if arg in NO_EFFECT or (arg and (arg, tok.string) in args) or _index(toks, i):
                continue  # no effect, the same argument as an earlier call, or an index
            args.add((arg, tok.string))
            out.append(Tweak(line=line, start=col, end=tok.end[1], kind="num", arg=arg))
        elif (
            tok.type == tokenize.NAME
            and tok.string not in models
            and family(tok.string) is not None
            and i + 1 < len(toks)
            and toks[i + 1].string == "("
            and (i == 0 or toks[i - 1].string != ".")
        ):
            models.add(tok.string)
            barred = _barred("model", tok.string, script, called, vocab)
            tweak = Tweak(line=line, start=col, end=tok.end[1], kind="model", barred=barred)
            if options(tweak, vocab):
                out.append(tweak)
        elif tok.type == tokenize.OP and tok.string == "[" and vocab:
            j, names = i + 1, []
            while j < len(toks) and toks[j].type == tokenize.STRING:
                names.append(toks[j].string)
                j += 2 if j + 1 < len(toks) and toks[j + 1].string == "," else 1
            if j < len(toks) and toks[j].string == "]" and names and toks[j].end[0] == row:
                plain = [n[1:-1] for n in names if n[0] in "'\"" and n[-1] == n[0]]
                known = len(plain) == len(names) and set(plain) <= set(vocab)
                barred = _barred("names", "", script, called, vocab)
                if known and set(vocab) - set(plain) - set(barred):
                    end = toks[j].end[1]
                    out.append(Tweak(line=line, start=col, end=end, kind="names", barred=barred))
    return out


def open_tweaks(script: str, vocab: list[str], siblings: list[str] | None = None) -> list[Tweak]:
    """The settings of the parent with a value left to try: the values its other children
    already hold (`siblings`: their scripts) are offered no more."""
    have = set(siblings or [])
    out: list[Tweak] = []
    for tweak in tweaks_of(script, vocab):
        if tweak.kind == "names":
            tried = _added(tweak, have, vocab)
        else:
            tried = [o for o in options(tweak, vocab) if apply_tweak(script, tweak, o) in have]
        if set(options(tweak, vocab)) <= set(tried):
            continue
        out.append(tweak.model_copy(update={"tried": tried}) if tried else tweak)
    return out


def pick_tweak(
    script: str, vocab: list[str], rng: random.Random, siblings: list[str] | None = None
) -> Tweak | None:
    """A setting of the parent with a value left to try (open_tweaks), drawn at random."""
    open_ = open_tweaks(script, vocab, siblings)
    if not open_:
        return None
    # a model swap holds most of a starter's headroom: it is picked twice as often
    return rng.choices(open_, weights=[MODEL_WEIGHT if t.kind == "model" else 1 for t in open_])[0]


def _listed(column: str, text: str) -> bool:
    return f'"{column}"' in text or f"'{column}'" in text


def _added(tweak: Tweak, siblings: set[str], vocab: list[str]) -> list[str]:
    """The columns siblings added to this list (their line with the same start, changed)."""
    head = tweak.line[: tweak.start]
    out: list[str] = []
    for script in siblings:
        for line in script.splitlines():
            if line.startswith(head) and line != tweak.line:
                out += [c for c in vocab if _listed(c, line) and not _listed(c, tweak.text)]
    return sorted(set(out), key=vocab.index)


def _numbers(text: str) -> list[str]:
    value = float(text)
    whole = "." not in text
    out: list[str] = []
    for f in FACTORS:
        v = value * f
        s = str(max(1, round(v))) if whole else f"{v:.6g}"
        if s != text and s not in out and "e" not in s:
            out.append(s)
    return out or ["1" if whole else "0.5"]


def options(tweak: Tweak, vocab: list[str]) -> list[str]:
    """What the model may choose from (numbers) or build from (names: the list plus columns)."""
    if tweak.kind == "num":
        return [o for o in _numbers(tweak.text) if o not in tweak.tried]
    left = set(tweak.tried) | set(tweak.barred)
    if tweak.kind == "model":
        return [o for o in alternatives(tweak.text) if o not in left]
    return [c for c in vocab if not _listed(c, tweak.text) and c not in left]


def tweak_grammar(tweak: Tweak, vocab: list[str], max_plan_chars: int = 200) -> str:
    """`Plan: ...` then `Value: <the new text of the setting>`."""
    n = max(1, int(max_plan_chars))
    head = f'root ::= "Plan: " plan "\\nValue: " value\nplan ::= [^\\n] [^\\n]{{0,{n - 1}}}\n'
    return head + value_rule(tweak, vocab, "value") + "\n"


def value_rule(tweak: Tweak, vocab: list[str], name: str) -> str:
    """The grammar rule `name` for the setting's new text (and the rule it uses)."""
    if tweak.kind in ("num", "model"):
        return f"{name} ::= " + " | ".join(gbnf_literal(o) for o in options(tweak, vocab))
    quote, kept = list_parts(tweak)
    names = " | ".join(gbnf_literal(f"{quote}{c}{quote}") for c in options(tweak, vocab))
    head = gbnf_literal(kept)
    return f'{name} ::= {head} (", " {name}-name){{1,{MAX_ADDED}}} "]"\n{name}-name ::= {names}'


def list_parts(tweak: Tweak) -> tuple[str, str]:
    """A column list's quote character and its text without the closing bracket (and without a
    trailing comma): a longer list is `kept` plus `, "name"` items plus `]`."""
    quote = tweak.text[1] if len(tweak.text) > 1 and tweak.text[1] in "'\"" else '"'
    return quote, tweak.text[:-1].rstrip().rstrip(",")


def _tie(toks: list[tokenize.TokenInfo], i: int) -> str:
    """What ties number token i to its other uses: the name of the keyword argument it is the
    value of (`C` in `f(C=0.1)`), or the scaling it divides or multiplies by (`/` in
    `x / 255.0`: the training and the test features must stay on one scale); "" otherwise."""
    if i >= 3 and toks[i - 1].string == "=" and toks[i - 2].type == tokenize.NAME:
        return toks[i - 2].string if toks[i - 3].string in ("(", ",") else ""
    if i >= 1 and toks[i - 1].string in ("/", "*"):
        return toks[i - 1].string
    return ""


def _index(toks: list[tokenize.TokenInfo], i: int) -> bool:
    """Token i is a subscript or a slice bound (`[:, 1]`, `[0]`): another value breaks it."""
    after = toks[i + 1].string if i + 1 < len(toks) else ""
    return toks[i - 1].string in ("[", ":") or after in ("]", ":")


def _sites(script: str, tweak: Tweak) -> list[tuple[int, int, int]]:
    """(line index, start, end) of each place the tweak changes: its own span, and for a
    keyword argument every call in the code that passes it the same number (the holdout
    model and the final one of a script get one setting), for a scaling every place that
    scales by the same number."""
    lines = script.splitlines()
    own = (lines.index(tweak.line), tweak.start, tweak.end)
    if not tweak.arg:
        return [own]
    toks = list(tokenize.generate_tokens(io.StringIO(script).readline))
    found = {
        (t.start[0] - 1, t.start[1], t.end[1])
        for i, t in enumerate(toks)
        if t.type == tokenize.NUMBER and t.string == tweak.text and _tie(toks, i) == tweak.arg
    }
    return sorted(found | {own})


def apply_tweak(script: str, tweak: Tweak, value: str) -> str:
    """The script with the setting changed to `value` (a number given as a keyword argument or
    a scaling: everywhere it is the same; a model: every call of it, and its import added)."""
    if tweak.kind == "model":
        return swap(script, tweak.text, value)
    lines = script.splitlines()
    for row, start, end in reversed(_sites(script, tweak)):  # right to left: spans hold
        lines[row] = lines[row][:start] + value + lines[row][end:]
    return "\n".join(lines) + ("\n" if script.endswith("\n") else "")


def describe(tweak: Tweak) -> str:
    if tweak.kind == "model":
        others = ", ".join(options(tweak, []))
        return f"Change the model {tweak.text} to one of: {others}\nin: {tweak.line.strip()}"
    what = "this number" if tweak.kind == "num" else "this list of columns (add to it)"
    return f"Change {what}: {tweak.text}\nin the line: {tweak.line.strip()}"


def value_match(text: str) -> re.Match[str]:
    """The `Value: ...` line of a reply (group 1: the value)."""
    match = _VALUE.search(text)
    if match is None:
        raise ResponseParseError("no 'Value: ...' line found")
    return match


def apply_value(text: str, script: str, tweak: Tweak) -> tuple[str, str]:
    """(plan, new script) from a `Plan: ... / Value: ...` reply to a tweak."""
    match = value_match(text)
    value = _once(match.group(1), tweak) if tweak.kind == "names" else match.group(1)
    if value == tweak.text:
        raise ResponseParseError(f"the value {value} is the one the script has")
    try:
        return plan_of(text[: match.start()]), apply_tweak(script, tweak, value)
    except ValueError as exc:  # a model with no grammar named an estimator of another kind
        raise ResponseParseError(str(exc)) from exc


def _once(value: str, tweak: Tweak) -> str:
    """A grown column list with each added column once, at its first mention: the grammar
    cannot forbid a repeat, and a column listed twice fails every fit (two columns of one
    name). A value not of the list's shape is returned as it is."""
    quote, kept = list_parts(tweak)
    if not (value.startswith(kept) and value.endswith("]")):
        return value
    named = re.findall(f"{quote}([^{quote}]*){quote}", value[len(kept) : -1])
    added = [c for c in dict.fromkeys(named) if not _listed(c, tweak.text)]
    return kept + "".join(f", {quote}{c}{quote}" for c in added) + "]"


def plan_of(head: str) -> str:
    """The plan of a reply's head: what follows `Plan:`, or all of it."""
    match = _PLAN.search(head)
    return (head[match.end() :] if match else head).strip()
