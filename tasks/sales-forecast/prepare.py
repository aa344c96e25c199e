"""Prepare the sales-forecast task: seeded daily sales of several shops, forecast 28 days ahead.

Each series = level x trend (with a possible change of slope) x weekly profile x yearly cycle,
with count noise, a few stock-out days and promotion spikes in the history.

python prepare.py --public DIR --private DIR --seed N
"""

import argparse
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

N_SERIES = 30
N_HISTORY = 730
HORIZON = 28
START = date(2022, 1, 3)  # a Monday


def make_series(rng, t):
    n = len(t)
    level = np.exp(rng.uniform(np.log(40), np.log(500)))
    # piecewise-linear trend in log space, the slope may change once
    slope1 = rng.uniform(-0.25, 0.5) / 365
    cp = rng.randint(int(0.4 * N_HISTORY), int(0.9 * N_HISTORY))
    slope2 = slope1 + (rng.uniform(-0.4, 0.4) / 365 if rng.rand() < 0.5 else 0.0)
    trend = np.where(t < cp, slope1 * t, slope1 * cp + slope2 * (t - cp))
    # weekly profile: one of a few shop types, jittered
    kind = rng.randint(3)
    if kind == 0:
        week = np.array([0.9, 0.9, 0.95, 1.0, 1.15, 1.45, 1.2])  # weekend shop
    elif kind == 1:
        week = np.array([1.1, 1.1, 1.1, 1.1, 1.05, 0.6, 0.4])  # weekday shop
    else:
        week = np.array([1.0, 0.95, 1.0, 1.0, 1.1, 1.2, 0.8])
    week = week * np.exp(rng.normal(0, 0.05, size=7))
    week = week / week.mean()
    dow = t % 7
    yearly = rng.uniform(0.05, 0.35) * np.sin(2 * np.pi * t / 365.25 + rng.uniform(0, 2 * np.pi))
    mean = level * np.exp(trend + yearly) * week[dow]
    # count noise with extra (gamma) dispersion
    noisy = rng.poisson(mean * rng.gamma(80.0, 1 / 80.0, size=n)).astype(float)
    return mean, noisy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(args.seed)

    t = np.arange(N_HISTORY + HORIZON)
    dates = [(START + timedelta(days=int(d))).isoformat() for d in t]
    hist_rows, future_rows = [], []
    for s in range(N_SERIES):
        name = f"s{s:02d}"
        _, sales = make_series(rng, t)
        hist = sales[:N_HISTORY].copy()
        # anomalies in the history only: stock-outs (zero sales) and promotion spikes
        n_anom = rng.randint(0, 12)
        where = rng.choice(N_HISTORY, size=n_anom, replace=False)
        for w in where:
            hist[w] = 0.0 if rng.rand() < 0.5 else np.round(hist[w] * rng.uniform(2.0, 4.0))
        for d in range(N_HISTORY):
            hist_rows.append((name, dates[d], int(hist[d])))
        for h in range(HORIZON):
            d = N_HISTORY + h
            future_rows.append((f"{name}_{h + 1:02d}", name, dates[d], h + 1, int(sales[d])))

    pd.DataFrame(hist_rows, columns=["series", "date", "sales"]).to_csv(
        args.public / "train.csv", index=False
    )
    future = pd.DataFrame(future_rows, columns=["id", "series", "date", "step", "sales"])
    future[["id", "series", "date", "step"]].to_csv(args.public / "test.csv", index=False)
    pd.DataFrame({"id": future["id"], "sales": 0}).to_csv(
        args.public / "sample_submission.csv", index=False
    )
    # validation / test: a seeded random half of the rows each
    is_val = np.zeros(len(future), dtype=bool)
    is_val[rng.choice(len(future), size=len(future) // 2, replace=False)] = True
    future.loc[is_val, ["id", "sales"]].to_csv(args.private / "validate.csv", index=False)
    future.loc[~is_val, ["id", "sales"]].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
