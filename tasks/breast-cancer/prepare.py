"""Make the breast-cancer task from scikit-learn's bundled Wisconsin diagnostic data (no network).

python prepare.py --public DIR --private DIR --seed N

Public:  train.csv (30 features + target), test.csv (features only), sample_submission.csv
Private: validate.csv, test.csv (id, target)
target: 1 = malignant, 0 = benign.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer

TRAIN_FRACTION = 0.6  # the rest is split evenly into validate and test, stratified


def make_frame() -> pd.DataFrame:
    data = load_breast_cancer()
    names = [name.replace(" ", "_") for name in data.feature_names]
    df = pd.DataFrame(np.asarray(data.data, dtype=float), columns=names)
    df["target"] = 1 - np.asarray(
        data.target, dtype=int
    )  # sklearn: 0 = malignant; here 1 = malignant
    return df


def split(df: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stratified train / validate / test split."""
    rng = np.random.default_rng(seed)
    parts: dict[str, list[int]] = {"train": [], "validate": [], "test": []}
    for label in (0, 1):
        idx = np.flatnonzero(df["target"].to_numpy() == label)
        idx = rng.permutation(idx)
        n_train = int(round(TRAIN_FRACTION * len(idx)))
        n_val = (len(idx) - n_train) // 2
        parts["train"] += idx[:n_train].tolist()
        parts["validate"] += idx[n_train : n_train + n_val].tolist()
        parts["test"] += idx[n_train + n_val :].tolist()
    return tuple(df.iloc[sorted(parts[k])] for k in ("train", "validate", "test"))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    df = make_frame()
    rng = np.random.default_rng(args.seed + 1)
    df.insert(0, "id", rng.permutation(len(df)) + 1)  # ids carry no order of the original file
    train, validate, test = split(df, args.seed)
    train = train.sort_values("id")
    validate = validate.sort_values("id")
    test = test.sort_values("id")
    public_test = pd.concat([validate, test]).drop(columns=["target"]).sort_values("id")

    train.to_csv(args.public / "train.csv", index=False)
    public_test.to_csv(args.public / "test.csv", index=False)
    sample = pd.DataFrame({"id": public_test["id"], "target": 1})
    sample.to_csv(args.public / "sample_submission.csv", index=False)
    validate[["id", "target"]].to_csv(args.private / "validate.csv", index=False)
    test[["id", "target"]].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
