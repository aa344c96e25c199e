"""Make the customer-churn task: synthetic, seeded subscription customers, some fields missing.

python prepare.py --public DIR --private DIR --seed N

Public:  train.csv (features + churned), test.csv (features only), sample_submission.csv
Private: validate.csv, test.csv (id, churned)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

N_ROWS = 3000
N_TRAIN = 1800  # the remaining 1200 rows are split evenly into validate and test


def make_frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_ROWS

    contract = rng.choice(["month-to-month", "one-year", "two-year"], size=n, p=[0.55, 0.25, 0.20])
    mtm = contract == "month-to-month"
    two = contract == "two-year"
    internet = rng.choice(["fiber", "dsl", "none"], size=n, p=[0.45, 0.35, 0.20])
    fiber = internet == "fiber"
    payment = rng.choice(
        ["electronic_check", "mailed_check", "bank_transfer", "credit_card"],
        size=n,
        p=[0.35, 0.20, 0.22, 0.23],
    )
    region = rng.choice(["north", "south", "east", "west"], size=n)
    paperless = rng.choice(["yes", "no"], size=n, p=[0.6, 0.4])

    # tenure: longer contracts go with longer tenure
    tenure = rng.exponential(np.where(mtm, 14.0, np.where(two, 40.0, 28.0)))
    tenure = np.clip(np.floor(tenure), 0, 72).astype(int)
    num_services = np.clip(rng.poisson(np.where(internet == "none", 1.2, 2.6)) + 1, 1, 7)
    base_charge = np.select([fiber, internet == "dsl"], [70.0, 50.0], default=22.0)
    monthly = np.round(base_charge + 6.5 * num_services + rng.normal(0, 6.0, n), 2)
    monthly = np.clip(monthly, 15.0, 150.0)
    total = np.round(monthly * tenure * rng.normal(1.0, 0.04, n), 2)
    age = np.clip(np.round(rng.normal(45, 15, n)), 18, 90)
    support_calls = rng.poisson(0.6 + 0.9 * fiber + 0.5 * (num_services > 4))
    # satisfaction survey (1-5); unhappy customers are a little less likely to answer
    latent_sat = rng.normal(0.0, 1.0, n) - 0.35 * support_calls + 0.3 * (~fiber)
    satisfaction = np.clip(np.round(3.2 + 1.1 * latent_sat), 1, 5)
    last_login = np.round(rng.exponential(np.where(latent_sat < -0.5, 22.0, 9.0)))

    logit = (
        -1.5
        + 0.7 * mtm
        - 0.6 * two
        - 0.9 * np.log1p(tenure / 6.0)
        + 1.3 * (fiber & mtm)  # interaction: fiber customers on flexible contracts leave
        + 0.045 * (monthly - 65.0) * mtm  # price sensitivity only without a contract
        - 0.015 * (monthly - 65.0) * (~mtm)
        + 0.7 * support_calls * (tenure < 12)  # interaction: early trouble drives churn
        - 0.1 * support_calls * (tenure >= 12)
        + 0.9 * ((payment == "electronic_check") & (paperless == "yes"))  # interaction
        - 0.45 * latent_sat
        + 0.02 * np.minimum(last_login, 60)
        + 0.6 * (age < 26) * mtm
        - 0.15 * (num_services - 3) * (~mtm)
    )
    churned = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)

    df = pd.DataFrame(
        {
            "age": age,
            "region": region,
            "tenure_months": tenure,
            "contract": contract,
            "internet_service": internet,
            "num_services": num_services,
            "payment_method": payment,
            "paperless_billing": paperless,
            "monthly_charges": monthly,
            "total_charges": total,
            "support_calls_90d": support_calls.astype(float),
            "satisfaction_score": satisfaction,
            "days_since_last_login": last_login,
            "churned": churned,
        }
    )

    # missing values, some informative
    def blank(col: str, p: np.ndarray | float) -> None:
        mask = rng.random(n) < p
        df.loc[mask, col] = np.nan

    blank("age", 0.06)
    blank("total_charges", 0.07)
    blank("support_calls_90d", 0.10)
    blank("satisfaction_score", np.where(latent_sat < -0.5, 0.55, 0.30))  # unhappy skip the survey
    blank(
        "days_since_last_login", np.where(df["churned"].to_numpy() == 1, 0.25, 0.12)
    )  # app unused
    blank("payment_method", 0.04)
    blank("internet_service", 0.03)

    df.insert(0, "id", rng.permutation(n) + 10001)
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
    train = df.iloc[:N_TRAIN].sort_values("id")
    rest = df.iloc[N_TRAIN:]
    half = len(rest) // 2
    validate = rest.iloc[:half].sort_values("id")
    test = rest.iloc[half:].sort_values("id")
    public_test = rest.drop(columns=["churned"]).sort_values("id")

    train.to_csv(args.public / "train.csv", index=False)
    public_test.to_csv(args.public / "test.csv", index=False)
    sample = pd.DataFrame({"id": public_test["id"], "churned": 0.5})
    sample.to_csv(args.public / "sample_submission.csv", index=False)
    validate[["id", "churned"]].to_csv(args.private / "validate.csv", index=False)
    test[["id", "churned"]].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
