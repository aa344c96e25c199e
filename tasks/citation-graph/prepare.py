"""Prepare the citation-graph task: a seeded, citation-like graph of papers in several topics.

Papers (nodes) have sparse, noisy keyword features; citations (edges) mostly link papers of the
same topic, with a heavy-tailed degree distribution. Only some papers' topics are public.

python prepare.py --public DIR --private DIR --seed N
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

N_NODES = 900
N_CLASSES = 5
N_WORDS = 40
N_LABELLED = 300
HOMOPHILY = 0.75


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(args.seed)

    n, k = N_NODES, N_CLASSES
    y = rng.choice(k, size=n, p=[0.3, 0.25, 0.2, 0.15, 0.1])

    # keyword features: each topic prefers a few keywords; every paper also uses random ones
    base = rng.uniform(0.02, 0.08, size=N_WORDS)
    pref = np.tile(base, (k, 1))
    for c in range(k):
        words = rng.choice(N_WORDS, size=8, replace=False)
        pref[c, words] += rng.uniform(0.06, 0.16, size=8)
    X = (rng.rand(n, N_WORDS) < pref[y]).astype(np.int64)

    # citations: each paper cites a few earlier-or-later papers, preferring its own topic and
    # popular papers (preferential attachment)
    popularity = rng.pareto(2.0, size=n) + 1.0
    edges = set()
    n_cites = 1 + rng.poisson(2.0, size=n)
    by_class = [np.flatnonzero(y == c) for c in range(k)]
    for i in range(n):
        for _ in range(n_cites[i]):
            if rng.rand() < HOMOPHILY:
                pool = by_class[y[i]]
            else:
                pool = np.flatnonzero(y != y[i])
            w = popularity[pool] / popularity[pool].sum()
            j = int(pool[rng.choice(len(pool), p=w)])
            if j != i:
                edges.add((i, j))
    edges = np.array(sorted(edges), dtype=np.int64)

    # node ids are shuffled so that they say nothing about the topic
    perm = rng.permutation(n)
    ids = perm  # node i gets id perm[i]
    order = np.argsort(ids)
    X, y, ids = X[order], y[order], ids[order]
    edges = perm[edges]
    edges = edges[np.lexsort((edges[:, 1], edges[:, 0]))]

    labelled = np.zeros(n, dtype=bool)
    labelled[rng.choice(n, size=N_LABELLED, replace=False)] = True

    nodes = pd.DataFrame(X, columns=[f"w{i}" for i in range(N_WORDS)])
    nodes.insert(0, "label", pd.array(np.where(labelled, y, -1), dtype="Int64"))
    nodes.loc[~labelled, "label"] = pd.NA
    nodes.insert(0, "id", ids)
    nodes.to_csv(args.public / "nodes.csv", index=False)
    pd.DataFrame({"source": edges[:, 0], "target": edges[:, 1]}).to_csv(
        args.public / "edges.csv", index=False
    )

    test_ids = ids[~labelled]
    test_y = y[~labelled]
    shuffle = rng.permutation(len(test_ids))
    test_ids, test_y = test_ids[shuffle], test_y[shuffle]
    pd.DataFrame({"id": test_ids}).to_csv(args.public / "test.csv", index=False)
    pd.DataFrame({"id": test_ids, "label": 4}).to_csv(
        args.public / "sample_submission.csv", index=False
    )
    n_val = len(test_ids) // 2
    answers = pd.DataFrame({"id": test_ids, "label": test_y})
    answers.iloc[:n_val].to_csv(args.private / "validate.csv", index=False)
    answers.iloc[n_val:].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
