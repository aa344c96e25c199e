"""bronze reference for customer-churn: logistic regression on all columns.

Numeric gaps are filled with the training median plus a was-missing flag; categories are
one-hot encoded with a column for missing.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

CATEGORICAL = ["region", "contract", "internet_service", "payment_method", "paperless_billing"]

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
n = len(train)

X = pd.concat([train.drop(columns=["churned"]), test], ignore_index=True).drop(columns=["id"])
for col in [c for c in X.columns if c not in CATEGORICAL]:
    if X[col].isna().any():
        X[col + "_missing"] = X[col].isna().astype(float)
        X[col] = X[col].fillna(X[col].iloc[:n].median())
X = pd.get_dummies(X, columns=CATEGORICAL, dummy_na=True).astype(float)

scaler = StandardScaler().fit(X.iloc[:n])
Xs = scaler.transform(X)
model = LogisticRegression(max_iter=2000).fit(Xs[:n], train["churned"])
proba = model.predict_proba(Xs[n:])[:, 1]
pd.DataFrame({"id": test["id"], "churned": proba}).to_csv("submission.csv", index=False)
