"""Make the diabetes task from scikit-learn's bundled diabetes data (raw units, no network).

python prepare.py --public DIR --private DIR --seed N

Public:  train.csv (10 baseline measurements + progression), test.csv (features only),
         sample_submission.csv
Private: validate.csv, test.csv (id, progression)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes

TRAIN_FRACTION = 0.6  # the rest is split evenly into validate and test
# sklearn's s1..s6 are blood serum measurements; give them their usual names
COLUMNS = ["age", "sex", "bmi", "bp", "tc", "ldl", "hdl", "tch", "ltg", "glu"]


def make_frame() -> pd.DataFrame:
    data = load_diabetes(scaled=False)
    # rounding makes the files byte-identical across scikit-learn versions, which parse the
    # bundled file slightly differently (e.g. 4.804 vs 4.803999999999999)
    df = pd.DataFrame(np.asarray(data.data, dtype=float).round(4), columns=COLUMNS)
    df["age"] = df["age"].astype(int)
    df["sex"] = df["sex"].astype(int)
    df["glu"] = df["glu"].astype(int)
    df["progression"] = np.asarray(data.target, dtype=float).round().astype(int)
    return df


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    df = make_frame()
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(df))
    df.insert(0, "id", rng.permutation(len(df)) + 1)  # ids carry no order of the original file
    n_train = int(round(TRAIN_FRACTION * len(df)))
    n_val = (len(df) - n_train) // 2
    train = df.iloc[order[:n_train]].sort_values("id")
    validate = df.iloc[order[n_train : n_train + n_val]].sort_values("id")
    test = df.iloc[order[n_train + n_val :]].sort_values("id")
    public_test = pd.concat([validate, test]).drop(columns=["progression"]).sort_values("id")

    train.to_csv(args.public / "train.csv", index=False)
    public_test.to_csv(args.public / "test.csv", index=False)
    sample = pd.DataFrame({"id": public_test["id"], "progression": 100})
    sample.to_csv(args.public / "sample_submission.csv", index=False)
    validate[["id", "progression"]].to_csv(args.private / "validate.csv", index=False)
    test[["id", "progression"]].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
