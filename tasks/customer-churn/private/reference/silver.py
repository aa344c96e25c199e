"""silver reference for customer-churn: gradient-boosted trees, native categories and NaN."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

CATEGORICAL = ["region", "contract", "internet_service", "payment_method", "paperless_billing"]

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
n = len(train)

X = pd.concat([train.drop(columns=["churned"]), test], ignore_index=True).drop(columns=["id"])
for col in CATEGORICAL:  # integer codes, NaN stays NaN
    X[col] = X[col].astype("category").cat.codes.replace(-1, np.nan).astype(float)
is_cat = [c in CATEGORICAL for c in X.columns]

model = HistGradientBoostingClassifier(categorical_features=is_cat, random_state=0)
model.fit(X.iloc[:n], train["churned"])
proba = model.predict_proba(X.iloc[n:])[:, 1]
pd.DataFrame({"id": test["id"], "churned": proba}).to_csv("submission.csv", index=False)
