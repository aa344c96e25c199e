"""Drawing a procedural task's design: domain, task type, columns, target and hidden signal.

Everything is a pure function of (seed, index, attempt). The identity of a task (its name,
domain, task type, metric, target and columns) depends on (seed, index) only; a new attempt,
taken when the measured reference scores are not cleanly ordered, redraws the hidden signal
and the data.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from .vocab import DOMAINS, Domain

TaskType = Literal["binary-classification", "multiclass-classification", "regression"]
METRICS: dict[str, tuple[tuple[str, bool], ...]] = {  # task type -> (metric, higher is better)
    "binary-classification": (("accuracy", True), ("roc_auc", True)),
    "multiclass-classification": (("accuracy", True),),
    "regression": (("rmse", False), ("mae", False)),
}
MIN_ROWS, MAX_ROWS = 200, 3000
# Accuracy moves in steps of one test row: the coarser the metric, the more rows a task needs
# for its references' scores to order (validate and test each get a fifth of the rows).
LEAST_ROWS = {"accuracy": 400, "multiclass": 500}
ROWS_PER_COLUMN = 12  # of the training rows: more columns than this would mostly add noise
MIN_FEATURES, MAX_FEATURES = 3, 25
TRAIN_SHARE = 0.6  # like the bundled tabular tasks: the rest is split into validate and test


class Column(BaseModel):
    """A numeric column; its values come from a standard-normal latent through `kind`."""

    name: str
    meaning: str
    kind: str
    a: float
    b: float
    dec: int
    loadings: list[float]  # on the two shared latent factors (correlated columns)
    missing: float = 0.0  # share of rows whose value is blanked


class Category(BaseModel):
    name: str
    meaning: str
    levels: list[str]
    probs: list[float]


class Signal(BaseModel):
    """One hidden score: linear, one-column nonlinear, interaction, category and missingness
    parts, each standardised and mixed by `shares` (variance shares)."""

    linear: list[tuple[int, float]]  # (numeric column, weight)
    additive: list[tuple[int, str, float, float]]  # (column, shape, knot, weight)
    interactions: list[tuple[int, int, str, float]]  # (column, column, kind, weight)
    categorical: dict[str, list[float]]  # category column -> offset of each level
    missing: list[tuple[int, float]]  # (column, weight of its was-missing flag)
    shares: dict[str, float]


class Target(BaseModel):
    name: str
    meaning: str
    labels: list[str] = Field(default_factory=list)  # classes as written ("0", "1", "gold")
    one: str = ""  # binary: what 1 means / what 0 means
    zero: str = ""
    mean: float = 0.0  # regression: location, spread, decimals, explained variance
    sd: float = 0.0
    dec: int = 2
    r2: float = 0.0
    strength: float = 0.0  # classification: logit scale and per-class offsets
    biases: list[float] = Field(default_factory=list)


class TaskDesign(BaseModel):
    """All a procedural task is made from; prepare.py carries it as JSON."""

    name: str
    seed: int
    index: int
    attempt: int
    data_seed: int
    domain: str
    title: str
    intro: str
    rows_noun: str
    task_type: TaskType
    metric: str
    higher_is_better: bool
    rows: int
    train_rows: int
    id_offset: int
    order: list[str]  # every feature column, in file order
    numeric: list[Column]
    categorical: list[Category]
    target: Target
    signals: list[Signal]  # one per class for multiclass, else one
    baseline_features: list[str]
    median_feature: str
    target_var: bool  # the scripts name the target through a TARGET constant


def task_name(seed: int, index: int) -> str:
    return f"proc-{seed}-{index}-{_identity(seed, index)[0].key}"


def _identity(seed: int, index: int) -> tuple[Domain, TaskType, np.random.Generator]:
    rng = np.random.default_rng([seed, index, 0x5EED])
    domain = DOMAINS[int(rng.integers(len(DOMAINS)))]
    types: list[TaskType] = ["binary-classification", "multiclass-classification", "regression"]
    return domain, types[int(rng.integers(3))], rng


def _pick(rng: np.random.Generator, items: list | tuple, k: int) -> list:
    order = rng.permutation(len(items))[:k]
    return [items[int(i)] for i in order]


def _draw_columns(
    rng: np.random.Generator, domain: Domain, n_features: int
) -> tuple[list[Column], list[Category], list[str]]:
    """Numeric columns (named ones, padded with a numbered family), categories, file order."""
    n_cat = 0 if n_features < 5 else int(rng.choice([0, 0, 1, 1, 2]))
    n_cat = min(n_cat, len(domain.categorical))
    n_num = n_features - n_cat
    named, fam = list(domain.numeric), domain.family
    extra = int(rng.integers(1, 4)) if rng.random() < 0.3 else 0  # sensor_7 now and then
    n_family = min(fam.size, max(0, n_num - len(named)) + extra, n_num - 2)
    n_num = min(n_num, n_family + len(named))
    numbers = sorted(int(i) + 1 for i in rng.permutation(fam.size)[:n_family])
    chosen = _pick(rng, named, n_num - n_family) + [
        (fam.pattern.format(i=i), fam.meaning.format(i=i), fam.kind, fam.a, fam.b, fam.dec)
        for i in numbers
    ]
    numeric = []
    for name, meaning, kind, a, b, dec in chosen:
        loadings = [round(float(v), 3) for v in rng.uniform(-0.4, 0.4, 2)]
        numeric.append(
            Column(name=name, meaning=meaning, kind=kind, a=a, b=b, dec=dec, loadings=loadings)
        )
    categorical = []
    for cat in _pick(rng, list(domain.categorical), n_cat):
        probs = rng.dirichlet(np.full(len(cat.levels), 4.0))
        categorical.append(
            Category(
                name=cat.name,
                meaning=cat.meaning,
                levels=list(cat.levels),
                probs=[round(float(p), 4) for p in probs / probs.sum()],
            )
        )
    order = [c.name for c in numeric]
    for cat in categorical:
        order.insert(int(rng.integers(1, len(order) + 1)), cat.name)
    return numeric, categorical, order


def _draw_target(rng: np.random.Generator, domain: Domain, task_type: TaskType) -> Target:
    if task_type == "binary-classification":
        spec = _pick(rng, list(domain.binary), 1)[0]
        return Target(
            name=spec.name, meaning=spec.one, one=spec.one, zero=spec.zero, labels=["0", "1"]
        )
    if task_type == "multiclass-classification":
        multi = _pick(rng, list(domain.multiclass), 1)[0]
        labels = list(multi.labels) or [str(i) for i in range(int(rng.integers(3, 6)))]
        return Target(name=multi.name, meaning=multi.what or multi.meaning, labels=labels)
    reg = _pick(rng, list(domain.regression), 1)[0]
    return Target(name=reg.name, meaning=reg.meaning, mean=reg.mean, sd=reg.sd, dec=reg.dec)


def design_task(seed: int, index: int, attempt: int = 0) -> TaskDesign:
    """The design of task `index` of `seed`; `attempt` redraws only the hidden signal."""
    if seed < 0 or index < 0 or attempt < 0:
        raise ValueError("seed, index and attempt must be zero or more")
    domain, task_type, rng = _identity(seed, index)
    metric, higher = METRICS[task_type][int(rng.integers(len(METRICS[task_type])))]
    least = MIN_ROWS if metric != "accuracy" else LEAST_ROWS["accuracy"]
    if task_type == "multiclass-classification":
        least = LEAST_ROWS["multiclass"]
    rows = int(round(math.exp(rng.uniform(math.log(least), math.log(MAX_ROWS)))))
    most = min(MAX_FEATURES, int(rows * TRAIN_SHARE) // ROWS_PER_COLUMN)
    numeric, categorical, order = _draw_columns(
        rng, domain, int(rng.integers(MIN_FEATURES, most + 1))
    )
    n_num = len(numeric)
    target = _draw_target(rng, domain, task_type)
    target_var = bool(rng.random() < 0.5)

    # -- the hidden signal: redrawn on each attempt -------------------------------------------
    srng = np.random.default_rng([seed, index, attempt, 0x516])
    k_base = min(int(srng.integers(1, 4)), n_num - 1)
    informative = max(k_base + 2, int(round(n_num * srng.uniform(0.3, 0.7))))
    informative = min(informative, n_num)
    inf_cols = sorted(int(i) for i in srng.permutation(n_num)[:informative])
    base_cols = [int(j) for j in srng.permutation(inf_cols)[:k_base]]
    rest = [j for j in inf_cols if j not in base_cols]
    median_col = rest[int(srng.integers(len(rest)))]
    # the starter's columns carry much of the linear signal; the one column of the median
    # reference (ROC AUC tasks) some, the other informative columns the rest
    size = {j: srng.uniform(0.3, 0.8) for j in inf_cols}
    size |= {j: srng.uniform(1.0, 1.4) for j in base_cols} | {median_col: srng.uniform(0.5, 0.7)}
    kept = set(base_cols) | {median_col}
    if srng.random() < 0.45:
        free = [j for j in range(n_num) if j not in kept]
        for j in _pick(srng, free, min(len(free), int(srng.integers(1, 4)))):
            numeric[j].missing = round(float(srng.uniform(0.05, 0.3)), 3)
    n_classes = len(target.labels) if task_type == "multiclass-classification" else 1
    signals = []
    for _ in range(n_classes):  # the classes share the informative columns, not the signs
        weights = {j: float(size[j] * srng.choice([-1.0, 1.0])) for j in inf_cols}
        signals.append(_signal(srng, numeric, categorical, weights))
    if task_type == "regression":
        target.r2 = round(float(srng.uniform(0.7, 0.95)), 3)
    else:
        low = 3.0 if task_type == "multiclass-classification" else 2.5
        target.strength = round(float(srng.uniform(low, low + 2.0)), 3)
        if task_type == "binary-classification":  # the rarer class scores below the commoner
            rate = srng.uniform(0.15, 0.5) if metric == "roc_auc" else srng.uniform(0.3, 0.45)
            scale = math.sqrt(1 + math.pi * target.strength**2 / 8)
            target.biases = [round(math.log(rate / (1 - rate)) * scale, 4)]
        else:
            spread = srng.permutation(np.linspace(-0.9, 0.9, n_classes))
            target.biases = [
                round(float(b), 4) for b in spread + srng.uniform(-0.1, 0.1, n_classes)
            ]
    title_target = target.name.replace("_", " ")
    return TaskDesign(
        name=task_name(seed, index),
        seed=seed,
        index=index,
        attempt=attempt,
        data_seed=int(srng.integers(2**31)),
        domain=domain.key,
        title=f"{domain.title}: predict {title_target}",
        intro=domain.intro,
        rows_noun=domain.rows,
        task_type=task_type,
        metric=metric,
        higher_is_better=higher,
        rows=rows,
        train_rows=int(round(rows * TRAIN_SHARE)),
        id_offset=int(rng.choice([0, 1, 100, 1000, 5000, 10000])),
        order=order,
        numeric=numeric,
        categorical=categorical,
        target=target,
        signals=signals,
        baseline_features=[numeric[j].name for j in base_cols],
        median_feature=numeric[median_col].name,
        target_var=target_var,
    )


SHAPES = ("square", "step", "hinge", "abs", "sine")
PAIRS = ("product", "both_high")


def _signal(
    rng: np.random.Generator,
    numeric: list[Column],
    categorical: list[Category],
    weights: dict[int, float],
) -> Signal:
    n = len(numeric)
    additive = [
        (
            int(rng.integers(n)),
            str(rng.choice(SHAPES)),
            float(rng.uniform(-0.8, 0.8)),
            float(rng.choice([-1.0, 1.0])),
        )
        for _ in range(int(rng.integers(1, 4)))
    ]
    interactions = []
    for _ in range(int(rng.integers(1, 4))):
        i, j = (int(v) for v in rng.permutation(n)[:2])
        interactions.append((i, j, str(rng.choice(PAIRS)), float(rng.choice([-1.0, 1.0]))))
    cats = {
        c.name: [round(float(v), 3) for v in rng.normal(0, 1, len(c.levels))] for c in categorical
    }
    missing = [(j, float(rng.choice([-1.0, 1.0]))) for j, c in enumerate(numeric) if c.missing]
    shares = {
        "linear": rng.uniform(0.3, 0.45),
        "additive": rng.uniform(0.1, 0.25),
        "interaction": rng.uniform(0.25, 0.4),
        "categorical": rng.uniform(0.1, 0.25) if cats else 0.0,
        "missing": rng.uniform(0.05, 0.15) if missing else 0.0,
    }
    total = sum(shares.values())
    return Signal(
        linear=[(j, round(w, 4)) for j, w in sorted(weights.items())],
        additive=[(j, s, round(t, 3), w) for j, s, t, w in additive],
        interactions=interactions,
        categorical=cats,
        missing=missing,
        shares={k: round(float(v / total), 4) for k, v in shares.items() if v > 0},
    )
