"""Make the house-prices task: a synthetic, seeded housing market.

python prepare.py --public DIR --private DIR --seed N

Public:  train.csv (features + price), test.csv (features only), sample_submission.csv
Private: validate.csv, test.csv (id, price)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

N_ROWS = 2000
N_TRAIN = 1200  # the remaining 800 rows are split evenly into validate and test

NEIGHBORHOODS = ["Riverside", "Oakwood", "Downtown", "Hillcrest", "Meadowbrook", "Millbrook"]
NEIGH_PROB = [0.18, 0.20, 0.14, 0.12, 0.22, 0.14]
NEIGH_PREMIUM = {  # price multiplier
    "Riverside": 1.25,
    "Oakwood": 1.05,
    "Downtown": 1.35,
    "Hillcrest": 1.55,
    "Meadowbrook": 0.90,
    "Millbrook": 0.72,
}
NEIGH_DIST = {  # (mean, sd) of the distance to the city centre in km
    "Riverside": (6.0, 2.0),
    "Oakwood": (11.0, 3.0),
    "Downtown": (2.0, 1.0),
    "Hillcrest": (9.0, 3.0),
    "Meadowbrook": (16.0, 4.0),
    "Millbrook": (7.0, 2.5),
}
CONDITIONS = ["poor", "fair", "good", "excellent"]
COND_PROB = [0.08, 0.27, 0.45, 0.20]
COND_MULT = {"poor": 0.78, "fair": 0.92, "good": 1.0, "excellent": 1.12}


def make_frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_ROWS
    neigh = rng.choice(NEIGHBORHOODS, size=n, p=NEIGH_PROB)
    cond = rng.choice(CONDITIONS, size=n, p=COND_PROB)

    sqft = np.clip(np.exp(rng.normal(np.log(1750), 0.38, n)), 450, 6000).round()
    bedrooms = np.clip(np.round(sqft / 650 + rng.normal(0.4, 0.6, n)), 1, 7).astype(int)
    bathrooms = np.clip(np.round((sqft / 1000 + rng.normal(0.3, 0.45, n)) * 2) / 2, 1, 5)
    year_built = np.clip(np.round(rng.triangular(1890, 1995, 2024, n)), 1890, 2024).astype(int)
    mu_d = np.array([NEIGH_DIST[x][0] for x in neigh])
    sd_d = np.array([NEIGH_DIST[x][1] for x in neigh])
    distance_km = np.clip(rng.normal(mu_d, sd_d), 0.2, 35).round(2)
    lot_sqft = np.clip(
        np.exp(rng.normal(np.log(3.2 * sqft) + 0.05 * distance_km, 0.45)), 800, 120000
    )
    lot_sqft = lot_sqft.round(-1)
    garage_spaces = np.clip(rng.poisson(1.0 + 0.25 * (distance_km > 8), n), 0, 3)
    has_pool = (rng.random(n) < 0.08 + 0.12 * (sqft > 2400)).astype(int)
    school_rating = np.clip(
        np.round(rng.normal(6 + 0.8 * np.array([NEIGH_PREMIUM[x] for x in neigh]) * 2 - 1.6, 1.6)),
        1,
        10,
    ).astype(int)

    # --- the price (in $1000s): multiplicative core + nonlinear pieces + noise ---
    age = 2024 - year_built
    age_mult = np.where(
        age < 10,
        1.10 - 0.01 * age,  # new builds carry a premium that fades
        # then a mid-century dip, and a premium for historic houses
        np.where(age > 95, 1.06, 1.0 - 0.0022 * np.minimum(age - 10, 60)),
    )
    dist_mult = 0.65 + 0.45 * np.exp(-distance_km / 7.0)
    school_mult = (
        1.0 + 0.055 * np.maximum(school_rating - 6, 0) - 0.02 * np.maximum(5 - school_rating, 0)
    )
    lot_mult = 1.0 + 0.07 * np.log1p(lot_sqft / sqft / 3.0)
    core = 0.42 * sqft**0.92  # $1000s
    price = (
        core
        * np.array([NEIGH_PREMIUM[x] for x in neigh])
        * np.array([COND_MULT[x] for x in cond])
        * age_mult
        * dist_mult
        * school_mult
        * lot_mult
    )
    # bathroom shortage hurts: houses with fewer baths than bedrooms/2 sell at a discount
    price *= np.where(bathrooms < bedrooms / 2.0, 0.93, 1.0)
    price += 14.0 * garage_spaces + has_pool * np.where(sqft > 2400, 45.0, 12.0)
    price *= np.exp(rng.normal(0.0, 0.08, n))
    price = np.round(price, 1)

    df = pd.DataFrame(
        {
            "sqft": sqft.astype(int),
            "lot_sqft": lot_sqft.astype(int),
            "bedrooms": bedrooms,
            "bathrooms": bathrooms,
            "year_built": year_built,
            "neighborhood": neigh,
            "condition": cond,
            "distance_km": distance_km,
            "garage_spaces": garage_spaces.astype(int),
            "has_pool": has_pool,
            "school_rating": school_rating,
            "price": price,
        }
    )
    ids = rng.permutation(n) + 1
    df.insert(0, "id", ids)
    return df


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    df = make_frame(args.seed)
    train = df.iloc[:N_TRAIN].sort_values("id").reset_index(drop=True)
    rest = df.iloc[N_TRAIN:].reset_index(drop=True)
    half = len(rest) // 2
    validate = rest.iloc[:half].sort_values("id")
    test = rest.iloc[half:].sort_values("id")
    public_test = rest.drop(columns=["price"]).sort_values("id")

    train.to_csv(args.public / "train.csv", index=False)
    public_test.to_csv(args.public / "test.csv", index=False)
    sample = pd.DataFrame({"id": public_test["id"], "price": 100.0})
    sample.to_csv(args.public / "sample_submission.csv", index=False)
    validate[["id", "price"]].to_csv(args.private / "validate.csv", index=False)
    test[["id", "price"]].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
