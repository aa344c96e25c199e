"""Baseline: bag of words + multinomial naive Bayes. Writes submission.csv."""

import pandas as pd
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import MultinomialNB
from sklearn.pipeline import make_pipeline

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")

X_tr, X_ho, y_tr, y_ho = train_test_split(
    train["text"], train["label"], test_size=0.2, random_state=0
)
holdout = make_pipeline(CountVectorizer(), MultinomialNB()).fit(X_tr, y_tr)
print(f"holdout accuracy: {holdout.score(X_ho, y_ho):.4f}")

model = make_pipeline(CountVectorizer(), MultinomialNB()).fit(train["text"], train["label"])
pd.DataFrame({"id": test["id"], "label": model.predict(test["text"])}).to_csv(
    "submission.csv", index=False
)
print("wrote submission.csv")
