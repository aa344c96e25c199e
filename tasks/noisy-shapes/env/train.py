"""Baseline: logistic regression on the raw pixels. Writes submission.csv."""

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
features = [c for c in train.columns if c.startswith("p")]
X = train[features].to_numpy(dtype=float) / 255.0
y = train["label"].to_numpy()

X_tr, X_ho, y_tr, y_ho = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
holdout = LogisticRegression(C=0.1, solver="newton-cg", max_iter=300).fit(X_tr, y_tr)
print(f"holdout accuracy: {holdout.score(X_ho, y_ho):.4f}")

model = LogisticRegression(C=0.1, solver="newton-cg", max_iter=300).fit(X, y)
pred = model.predict(test[features].to_numpy(dtype=float) / 255.0)
pd.DataFrame({"id": test["id"], "label": pred}).to_csv("submission.csv", index=False)
print("wrote submission.csv")
