"""Baseline for house-prices: a straight line through the living area.

Reads train.csv / test.csv from the current folder and writes submission.csv (id, price).
Plenty of headroom: it ignores the neighbourhood, condition, age, location and more.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # small data: extra threads only add overhead

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression

FEATURES = ["sqft", "bedrooms", "bathrooms"]

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")

model = LinearRegression()
model.fit(train[FEATURES], train["price"])

pred = model.predict(test[FEATURES])
rmse = float(np.sqrt(np.mean((model.predict(train[FEATURES]) - train["price"]) ** 2)))
print(f"train RMSE: {rmse:.2f}")

pd.DataFrame({"id": test["id"], "price": pred}).to_csv("submission.csv", index=False)
print("wrote submission.csv")
