"""Silver-level reference: per shop and weekday, the mean of the last 4 weeks."""

import pandas as pd

train = pd.read_csv("train.csv", parse_dates=["date"])
test = pd.read_csv("test.csv", parse_dates=["date"])
recent = train.sort_values("date").groupby("series").tail(28).copy()
recent["dow"] = recent["date"].dt.day_of_week
lookup = recent.groupby(["series", "dow"])["sales"].mean()
keys = list(zip(test["series"], test["date"].dt.day_of_week, strict=True))
pd.DataFrame({"id": test["id"], "sales": lookup.loc[keys].round(2).to_numpy()}).to_csv(
    "submission.csv", index=False
)
