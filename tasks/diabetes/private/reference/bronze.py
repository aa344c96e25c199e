"""bronze reference for diabetes: linear regression on the three strongest measurements."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pandas as pd
from sklearn.linear_model import LinearRegression

FEATURES = ["bmi", "ltg", "bp"]

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
model = LinearRegression().fit(train[FEATURES], train["progression"])
pd.DataFrame({"id": test["id"], "progression": model.predict(test[FEATURES])}).to_csv(
    "submission.csv", index=False
)
