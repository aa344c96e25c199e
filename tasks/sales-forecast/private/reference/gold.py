"""Gold-level reference: per shop, a log-linear regression on the last year of sales with a linear
trend, weekday effects and a yearly cycle; stock-out and promotion days are dropped first."""

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression

WINDOW = 365


def design(t, dow):
    yearly = 2 * np.pi * t / 365.25
    return np.column_stack([t / 365.0, np.eye(7)[dow][:, 1:], np.sin(yearly), np.cos(yearly)])


train = pd.read_csv("train.csv", parse_dates=["date"])
test = pd.read_csv("test.csv", parse_dates=["date"])
origin = train["date"].min()
out = []
for series, hist in train.sort_values("date").groupby("series"):
    hist = hist.tail(WINDOW)
    y = hist["sales"].to_numpy(dtype=float)
    t = (hist["date"] - origin).dt.days.to_numpy()
    dow = hist["date"].dt.day_of_week.to_numpy()
    med = pd.Series(y).rolling(15, center=True, min_periods=1).median().to_numpy()
    ok = (y > 0.3 * med) & (y < 1.8 * med + 5) & (y > 0)
    model = LinearRegression().fit(design(t[ok], dow[ok]), np.log(y[ok]))
    resid_var = np.var(np.log(y[ok]) - model.predict(design(t[ok], dow[ok])))
    fut = test[test["series"] == series]
    tf = (fut["date"] - origin).dt.days.to_numpy()
    pred = np.exp(model.predict(design(tf, fut["date"].dt.day_of_week.to_numpy())) + resid_var / 2)
    out.append(pd.DataFrame({"id": fut["id"].to_numpy(), "sales": np.round(pred, 2)}))
pd.concat(out).to_csv("submission.csv", index=False)
