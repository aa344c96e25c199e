"""Prepare the digits task: scikit-learn's 8x8 handwritten digits, split into train and test.

python prepare.py --public DIR --private DIR --seed N
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits

N_TRAIN = 600


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    digits = load_digits()
    X = digits.data.astype(np.int64)
    y = digits.target.astype(np.int64)
    rng = np.random.RandomState(args.seed)
    order = rng.permutation(len(y))
    X, y = X[order], y[order]

    pixels = pd.DataFrame(X, columns=[f"p{i}" for i in range(X.shape[1])])
    ids = np.arange(len(y))
    df = pd.concat([pd.DataFrame({"id": ids}), pixels], axis=1)
    df.insert(1, "label", y)

    train = df.iloc[:N_TRAIN].reset_index(drop=True)
    test = df.iloc[N_TRAIN:].reset_index(drop=True)
    n_val = len(test) // 2

    train.to_csv(args.public / "train.csv", index=False)
    test.drop(columns=["label"]).to_csv(args.public / "test.csv", index=False)
    # A valid but useless submission: every image is a "0".
    pd.DataFrame({"id": test["id"], "label": 0}).to_csv(
        args.public / "sample_submission.csv", index=False
    )
    test[["id", "label"]].iloc[:n_val].to_csv(args.private / "validate.csv", index=False)
    test[["id", "label"]].iloc[n_val:].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
