"""Checks between the stages: the spec fits the seed, thresholds are ordered, nothing leaks."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from .roles import LEVELS, StrategistAnswer, TaskSpecDraft, WriterAnswer
from .seed import SeedFacts

NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])|(?<![\w.])-?\d+(?![\w.])")
TRIVIAL_NUMBERS = {0.0, 0.5, 1.0, 2.0, 10.0, 100.0}
DIGITS = 4  # thresholds are rounded to this many decimals, toward the easier side


def strictly_ordered(values: list[float], higher_is_better: bool) -> bool:
    sign = 1 if higher_is_better else -1
    return all(sign * (b - a) > 0 for a, b in zip(values, values[1:], strict=False))


def order_problem(thresholds: dict[str, float], higher_is_better: bool) -> str | None:
    """Why median < bronze < silver < gold does not hold in the metric's direction, or None."""
    values = [thresholds[level] for level in LEVELS]
    if any(not math.isfinite(v) for v in values):
        return f"thresholds are not all finite: {thresholds}"
    if strictly_ordered(values, higher_is_better):
        return None
    word = "increase" if higher_is_better else "decrease"
    shown = ", ".join(f"{k} {thresholds[k]:.6g}" for k in LEVELS)
    return f"thresholds not strictly ordered (they must {word} median -> gold): {shown}"


def round_threshold(value: float, higher_is_better: bool) -> float:
    """Round so that a method scoring exactly `value` still reaches the rounded threshold."""
    scale = 10**DIGITS
    rounded = math.floor(value * scale) if higher_is_better else math.ceil(value * scale)
    return round(rounded / scale, DIGITS)


def spec_problems(answer: StrategistAnswer, seed: SeedFacts) -> list[str]:
    """What the Strategist must fix: the seed's metric and direction, and a DNA free of domain."""
    spec = answer.spec
    problems = []
    if spec.metric.strip().lower() != seed.metric.lower():
        problems.append(
            f"spec.metric must be the seed's metric {seed.metric!r}, not {spec.metric!r}"
        )
    if spec.higher_is_better != seed.higher_is_better:
        problems.append(f"spec.higher_is_better must be {seed.higher_is_better} like the seed")
    dna_text = answer.dna.model_dump_json().lower()
    domain = [
        c
        for c in seed.column_names
        if len(c) >= 4 and c not in (seed.id_column, *seed.target_columns) and c.lower() in dna_text
    ]
    if domain:
        problems.append(f"the DNA must hold no domain words of the seed, found {domain[:5]}")
    if spec.scenario.strip().lower() not in {s.name.strip().lower() for s in answer.scenarios}:
        problems.append(f"spec.scenario {spec.scenario!r} must be one of the 5 scenarios' names")
    missing = [f.name for f in spec.features if f.name not in spec.hidden_rule]
    if len(missing) == len(spec.features):
        problems.append("the hidden rule uses none of the feature names")
    return problems


def spec_threshold_problem(spec: TaskSpecDraft) -> str | None:
    """The Strategist's own expected scores, where given, must already be ordered."""
    expected = {lvl: getattr(spec.thresholds, lvl).expected for lvl in LEVELS}
    if any(v is None for v in expected.values()):
        return None
    return order_problem(expected, spec.higher_is_better)  # type: ignore[arg-type]


def data_problems(public: Path, private: Path, spec: TaskSpecDraft) -> list[str]:
    """The files prepare.py wrote keep the task contract for this spec."""
    problems: list[str] = []
    need = [public / n for n in ("train.csv", "test.csv", "sample_submission.csv")]
    need += [private / n for n in ("validate.csv", "test.csv")]
    absent = [f"{p.parent.name}/{p.name}" for p in need if not p.is_file()]
    if absent:
        return [f"prepare.py did not write {absent}"]
    try:
        train, test, sample = (pd.read_csv(p) for p in need[:3])
        validate, hidden = (pd.read_csv(p) for p in need[3:])
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the developer's to fix
        return [f"a written CSV is unreadable: {exc}"]
    features = [f.name for f in spec.features]
    cols = ["id", *features, spec.target]
    if list(train.columns) != cols:
        problems.append(f"train.csv columns {list(train.columns)} != {cols}")
    if list(test.columns) != cols[:-1]:
        problems.append(f"test.csv columns {list(test.columns)} != {cols[:-1]}")
    for name, df in (("sample_submission.csv", sample), ("validate.csv", validate)):
        if list(df.columns) != ["id", spec.target]:
            problems.append(f"{name} columns {list(df.columns)} != ['id', '{spec.target}']")
    if list(hidden.columns) != ["id", spec.target]:
        problems.append(
            f"private test.csv columns {list(hidden.columns)} != ['id', '{spec.target}']"
        )
    total = len(train) + len(test)
    if not 50 <= total <= 200:
        problems.append(f"{total} samples in train.csv + test.csv; the spec allows 50 to 200")
    if problems:
        return problems
    test_ids, split_ids = set(test["id"]), list(validate["id"]) + list(hidden["id"])
    if len(set(split_ids)) != len(split_ids) or set(split_ids) != test_ids:
        problems.append("private validate.csv + test.csv must split the ids of public test.csv")
    if set(sample["id"]) != test_ids:
        problems.append("sample_submission.csv must hold every id of test.csv")
    if set(train["id"]) & test_ids:
        problems.append("train.csv and test.csv share ids")
    if min(len(validate), len(hidden)) < 10:
        problems.append("validate and test halves need at least 10 rows each")
    if train[spec.target].isna().any() or hidden[spec.target].isna().any():
        problems.append(f"the target {spec.target!r} has missing values")
    return problems


def description_problems(answer: WriterAnswer, spec: TaskSpecDraft, seed: SeedFacts) -> list[str]:
    """What a description must name: the files, the columns, the metric and its direction."""
    text = answer.description_md
    low = text.lower()
    names = ["train.csv", "test.csv", "sample_submission.csv", "submission.csv", "train.py"]
    names += [f.name for f in spec.features] + [spec.target]
    problems = [f"the description never names {n!r}" for n in names if n.lower() not in low]
    prose = _prose(text)  # a phrase may wrap across lines or carry markdown emphasis
    if _prose(seed.metric) not in prose:
        problems.append(f"the description never names the metric {seed.metric!r}")
    direction = "higher is better" if seed.higher_is_better else "lower is better"
    if direction not in prose:
        problems.append(f"the description must say {direction!r}")
    return problems


def _prose(text: str) -> str:
    """Lower-case words separated by single spaces: no line breaks, emphasis or underscores."""
    return " ".join(re.sub(r"[*_`-]+", " ", text).lower().split())


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def _numbers(text: str) -> set[float]:
    return {float(m) for m in NUMBER.findall(text)}


def leak_problem(
    description: str,
    spec: TaskSpecDraft,
    answers: pd.DataFrame | None,
    sizes: list[int] | tuple[int, ...] = (),
) -> str | None:
    """Does the description give away the hidden rule or the answers? (None: it does not.)

    The floor under the model's judge (judge.py): the rule's formula, wording, terms and
    coefficients verbatim. `sizes` are numbers the description must state (row counts): a
    coefficient equal to one of them is a coincidence, not a leak."""
    flat = _squash(description)
    rule = spec.hidden_rule.split("=", 1)[-1] if "=" in spec.hidden_rule else spec.hidden_rule
    if len(_squash(rule)) >= 8 and _squash(rule) in flat:
        return "the description contains the hidden rule's formula"
    if len(_squash(spec.rule_text)) >= 12 and _squash(spec.rule_text) in flat:
        return "the description contains the hidden rule's wording"
    for term in re.split(r"(?<!\*)[+\-](?!\*)", rule):
        t = _squash(term).strip("()")
        if any(c.isdigit() for c in t) and any(c.isalpha() for c in t) and len(t) >= 5:
            if t in flat:
                return f"the description contains a term of the hidden rule: {term.strip()!r}"
    coefficients = {abs(v) for v in _numbers(rule)} - TRIVIAL_NUMBERS - {float(n) for n in sizes}
    said = {abs(v) for v in _numbers(description)}
    shown = sorted(coefficients & said)
    if shown and len(shown) >= min(2, len(coefficients)):
        return f"the description gives the hidden rule's coefficients {shown}"
    if answers is not None and len(answers):
        return _answers_leak(description, answers, spec.target)
    return None


def _answers_leak(description: str, answers: pd.DataFrame, target: str) -> str | None:
    truth = {str(i): str(v) for i, v in zip(answers["id"], answers[target], strict=False)}
    pairs = re.findall(r"^\s*(\d+)\s*,\s*([^,\s]+)\s*$", description, flags=re.MULTILINE)
    hits = [p for p in pairs if truth.get(p[0]) is not None and _same(truth[p[0]], p[1])]
    if len(hits) >= 5 and len(hits) >= 0.9 * len(pairs):
        return f"the description lists {len(hits)} true answers"
    return None


def _same(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b
