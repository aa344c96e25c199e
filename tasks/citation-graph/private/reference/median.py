"""Median-level reference: every paper gets the most common topic of the labelled papers."""

import pandas as pd

nodes = pd.read_csv("nodes.csv")
test = pd.read_csv("test.csv")
majority = int(nodes["label"].dropna().astype(int).mode().iloc[0])
pd.DataFrame({"id": test["id"], "label": majority}).to_csv("submission.csv", index=False)
