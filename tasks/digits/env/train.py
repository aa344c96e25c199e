"""Baseline: a single decision tree on the raw pixels. Writes submission.csv."""

import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
features = [c for c in train.columns if c.startswith("p")]

# Quick holdout check, then refit on all the training images.
X_tr, X_ho, y_tr, y_ho = train_test_split(
    train[features], train["label"], test_size=0.2, random_state=0, stratify=train["label"]
)
holdout = DecisionTreeClassifier(random_state=0).fit(X_tr, y_tr)
print(f"holdout accuracy: {holdout.score(X_ho, y_ho):.4f}")

model = DecisionTreeClassifier(random_state=0).fit(train[features], train["label"])
pd.DataFrame({"id": test["id"], "label": model.predict(test[features])}).to_csv(
    "submission.csv", index=False
)
print("wrote submission.csv")
