"""Bronze-level reference: TF-IDF of words and word pairs + logistic regression."""

import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
model = make_pipeline(
    TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression(C=10, max_iter=2000)
).fit(train["text"], train["label"])
pd.DataFrame({"id": test["id"], "label": model.predict(test["text"])}).to_csv(
    "submission.csv", index=False
)
