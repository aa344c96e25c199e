"""Baseline: logistic regression on each paper's own keywords (ignores the citations).
Writes submission.csv."""

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

nodes = pd.read_csv("nodes.csv")
test = pd.read_csv("test.csv")
features = [c for c in nodes.columns if c.startswith("w")]
train = nodes[nodes["label"].notna()]

model = LogisticRegression(C=0.3, solver="newton-cg", max_iter=2000)
cv = cross_val_score(model, train[features], train["label"].astype(int), cv=5)
print(f"5-fold CV accuracy: {cv.mean():.4f}")

model.fit(train[features], train["label"].astype(int))
to_predict = nodes.set_index("id").loc[test["id"], features]
pd.DataFrame({"id": test["id"], "label": model.predict(to_predict)}).to_csv(
    "submission.csv", index=False
)
print("wrote submission.csv")
