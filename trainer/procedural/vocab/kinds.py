"""The shapes of the vocabulary: a domain, its numeric and categorical columns, its targets.

Names and units vary from task to task so that a model trained on these tasks must read the
column and target names from its prompt instead of recalling them. Each numeric column says
how its values are spread (`kind`, `a`, `b`) and how many decimals it is written with.
"""

from __future__ import annotations

from typing import NamedTuple


class Num(NamedTuple):
    """A numeric column. kind: normal (mean a, sd b), positive (the same, cut at 0),
    lognormal (median a, sigma b), uniform (a..b), int (whole numbers a..b), count (mean a),
    flag (0/1, 1 with probability a)."""

    name: str
    meaning: str
    kind: str
    a: float
    b: float = 0.0
    dec: int = 0


class Family(NamedTuple):
    """Numbered columns (`sensor_{i}`) that pad a domain to many features."""

    pattern: str
    meaning: str
    kind: str
    a: float
    b: float
    dec: int
    size: int


class Cat(NamedTuple):
    name: str
    meaning: str
    levels: tuple[str, ...]


class Binary(NamedTuple):
    name: str
    one: str  # what 1 means
    zero: str  # what 0 means


class Multi(NamedTuple):
    """A class target; `labels` are words, or empty for whole numbers 0..k-1 (`what` names them)."""

    name: str
    meaning: str
    labels: tuple[str, ...]
    what: str = ""


class Reg(NamedTuple):
    name: str
    meaning: str
    mean: float
    sd: float
    dec: int


class Domain(NamedTuple):
    key: str
    title: str
    intro: str
    rows: str  # what one row is, plural ("loan applications")
    numeric: tuple[Num, ...]
    categorical: tuple[Cat, ...]
    family: Family
    binary: tuple[Binary, ...]
    multiclass: tuple[Multi, ...]
    regression: tuple[Reg, ...]
