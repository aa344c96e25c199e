"""Bronze-level reference: logistic regression on scaled pixels."""

import pandas as pd
from sklearn.linear_model import LogisticRegression

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
features = [c for c in train.columns if c.startswith("p")]
model = LogisticRegression(max_iter=2000)
model.fit(train[features].to_numpy() / 16.0, train["label"])
pred = model.predict(test[features].to_numpy() / 16.0)
pd.DataFrame({"id": test["id"], "label": pred}).to_csv("submission.csv", index=False)
