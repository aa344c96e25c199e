"""Make a procedural task's data: a seeded synthetic table, as DESIGN below describes it.

python prepare.py --public DIR --private DIR --seed N

Public:  train.csv (features + target), test.csv (features only), sample_submission.csv
Private: validate.csv, test.csv (id + target)

The hidden signal mixes linear effects, one-column curves, interactions, category offsets and
informative missing values, so a model that uses more columns, and uses them better, scores
better. --seed draws a new sample of the same task.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

DESIGN: dict = json.loads("{}")  # trainer.procedural writes the task's design here


def _phi(z: np.ndarray) -> np.ndarray:
    """The standard normal distribution function."""
    return 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))


def _values(col: dict, z: np.ndarray) -> np.ndarray:
    kind, a, b = col["kind"], col["a"], col["b"]
    if kind == "normal":
        x = a + b * z
    elif kind == "positive":
        x = np.maximum(a + b * z, 0.0)
    elif kind == "lognormal":
        x = a * np.exp(b * z)
    elif kind == "uniform":
        x = a + (b - a) * _phi(z)
    elif kind == "int":
        x = np.minimum(np.floor(a + (b - a + 1) * _phi(z)), b)
    elif kind == "count":
        x = np.round(a * np.exp(0.6 * z - 0.18))
    elif kind == "flag":
        x = (_phi(z) > 1.0 - a).astype(float)
    else:
        raise ValueError(f"unknown column kind {kind!r}")
    return np.round(x, col["dec"])


def _standard(v: np.ndarray) -> np.ndarray:
    sd = float(v.std())
    return (v - v.mean()) / sd if sd > 1e-12 else np.zeros_like(v)


def _shape(kind: str, z: np.ndarray, knot: float) -> np.ndarray:
    if kind == "square":
        return (z - knot) ** 2
    if kind == "step":
        return (z > knot).astype(float)
    if kind == "hinge":
        return np.maximum(z - knot, 0.0)
    if kind == "abs":
        return np.abs(z - knot)
    return np.sin(2.0 * z + knot)


def _pair(kind: str, zi: np.ndarray, zj: np.ndarray) -> np.ndarray:
    if kind == "product":
        return zi * zj
    return ((zi > 0.3) & (zj > 0.3)).astype(float)


def _signal(sig: dict, z: np.ndarray, codes: dict, masks: dict) -> np.ndarray:
    n = z.shape[0]
    parts = {
        "linear": sum((w * z[:, j] for j, w in sig["linear"]), np.zeros(n)),
        "additive": sum((w * _shape(s, z[:, j], t) for j, s, t, w in sig["additive"]), np.zeros(n)),
        "interaction": sum(
            (w * _pair(k, z[:, i], z[:, j]) for i, j, k, w in sig["interactions"]), np.zeros(n)
        ),
        "categorical": sum(
            (np.asarray(off)[codes[name]] for name, off in sig["categorical"].items()), np.zeros(n)
        ),
        "missing": sum((w * masks[j] for j, w in sig["missing"]), np.zeros(n)),
    }
    shares = sig["shares"]
    mixed = sum(math.sqrt(shares[k]) * _standard(v) for k, v in parts.items() if k in shares)
    return _standard(mixed)


def make_frame(design: dict, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng([design["data_seed"], seed])
    n, numeric = design["rows"], design["numeric"]
    factors = rng.standard_normal((n, 2))
    z = np.empty((n, len(numeric)))
    for j, col in enumerate(numeric):
        l1, l2 = col["loadings"]
        z[:, j] = factors @ np.array([l1, l2]) + math.sqrt(1 - l1 * l1 - l2 * l2) * (
            rng.standard_normal(n)
        )
    codes = {
        c["name"]: rng.choice(len(c["levels"]), size=n, p=np.asarray(c["probs"]) / sum(c["probs"]))
        for c in design["categorical"]
    }
    masks = {j: (rng.random(n) < col["missing"]).astype(float) for j, col in enumerate(numeric)}
    scores = np.stack([_signal(s, z, codes, masks) for s in design["signals"]], axis=1)
    target = design["target"]
    if design["task_type"] == "regression":
        noise = rng.standard_normal(n)
        r2 = target["r2"]
        y = target["mean"] + target["sd"] * (
            math.sqrt(r2) * scores[:, 0] + math.sqrt(1 - r2) * noise
        )
        y = np.round(np.maximum(y, 0.05 * target["mean"]), target["dec"])
    elif design["task_type"] == "binary-classification":
        logit = target["strength"] * scores[:, 0] + target["biases"][0]
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    else:
        logits = target["strength"] * scores + np.asarray(target["biases"])
        gumbel = -np.log(-np.log(rng.random(logits.shape)))
        picked = np.argmax(logits + gumbel, axis=1)
        labels = target["labels"]
        numeric_labels = all(lbl.isdigit() for lbl in labels)
        y = picked if numeric_labels else np.asarray(labels, dtype=object)[picked]

    columns = {}
    for j, col in enumerate(numeric):
        x = _values(col, z[:, j])
        whole = col["dec"] == 0
        if col["missing"]:
            series = pd.Series(np.where(masks[j] > 0, np.nan, x))
            columns[col["name"]] = series.astype("Int64") if whole else series
        else:
            columns[col["name"]] = x.astype(int) if whole else x
    for c in design["categorical"]:
        columns[c["name"]] = np.asarray(c["levels"], dtype=object)[codes[c["name"]]]
    df = pd.DataFrame({name: columns[name] for name in design["order"]})
    df[target["name"]] = y
    df.insert(0, "id", rng.permutation(n) + design["id_offset"])
    return df


def sample_value(design: dict, train: pd.DataFrame) -> object:
    """A valid prediction that scores badly: a round constant, 0.5, or the rarest class."""
    target = design["target"]
    if design["task_type"] == "regression":
        half = target["mean"] / 2.0
        unit = 10 ** math.floor(math.log10(half))
        return float(round(half / unit) * unit)
    if design["metric"] == "roc_auc":
        return 0.5
    counts = train[target["name"]].astype(str).value_counts()
    rarest = min(target["labels"], key=lambda lbl: (counts.get(lbl, 0), lbl))
    return int(rarest) if rarest.isdigit() else rarest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    design = DESIGN
    name = design["target"]["name"]
    df = make_frame(design, args.seed)
    n_train = design["train_rows"]
    train = df.iloc[:n_train].sort_values("id").reset_index(drop=True)
    rest = df.iloc[n_train:].reset_index(drop=True)
    half = len(rest) // 2
    validate = rest.iloc[:half].sort_values("id")
    test = rest.iloc[half:].sort_values("id")
    public_test = rest.drop(columns=[name]).sort_values("id")

    train.to_csv(args.public / "train.csv", index=False)
    public_test.to_csv(args.public / "test.csv", index=False)
    sample = pd.DataFrame({"id": public_test["id"], name: sample_value(design, train)})
    sample.to_csv(args.public / "sample_submission.csv", index=False)
    validate[["id", name]].to_csv(args.private / "validate.csv", index=False)
    test[["id", name]].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
