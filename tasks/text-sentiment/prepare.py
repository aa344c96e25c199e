"""Prepare the text-sentiment task: seeded synthetic product and restaurant reviews.

A review's sentiment is the sum of its opinion clauses. Each clause has a polarity word, which may
be intensified ("very good"), negated ("not good", "wasn't very good", "never seemed boring") or
softened, and a clause after "but" counts double. Clauses about expectations ("i expected it to be
great") carry no opinion. Neutral filler sentences are mixed in, and a few labels are flipped.

python prepare.py --public DIR --private DIR --seed N
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

N_TRAIN = 3000
N_TEST = 2000
LABEL_NOISE = 0.03

POS1 = "good nice solid decent pleasant reliable comfortable fun helpful fresh".split()
POS2 = "excellent amazing fantastic superb perfect".split()
NEG1 = "bad poor slow flimsy boring cheap noisy dull weak bland".split()
NEG2 = "terrible awful horrible useless dreadful".split()
INTENS = "very really extremely super incredibly".split()
SOFT = ["fairly", "somewhat", "rather"]
NOUNS = (
    "battery screen keyboard camera speaker charger case app service staff waiter food "
    "pizza soup coffee dessert room bed shower delivery price packaging manual plot "
    "acting soundtrack ending interface setup fabric zipper"
).split()
BE = ["was", "is", "seemed", "felt"]
NEG_BE = {
    "was": ["was not", "wasn't"],
    "is": ["is not", "isn't"],
    "seemed": ["never seemed", "didn't seem"],
    "felt": ["never felt", "didn't feel"],
}
POS_VERB = [
    "i loved it",
    "i liked it",
    "i would recommend it",
    "i will buy it again",
    "we will come back",
    "it works as advertised",
    "worth every penny",
]
NEG_VERB = [
    "i would not recommend it",
    "i did not like it",
    "i will not buy it again",
    "we will never come back",
    "it does not work as advertised",
    "not worth the money",
]
FILLER = [
    "i bought this last week",
    "my sister recommended it",
    "we went there on a saturday",
    "to be honest",
    "it arrived on tuesday",
    "i have used it for a month",
    "we ordered the special",
    "the box was blue",
    "my friend has the same one",
    "i read the reviews first",
    "it came with a cable",
    "we sat near the window",
    "i paid with a card",
    "the store was on main street",
    "it was my first time",
    "i use it every day",
    "the parking lot was full",
    "we were a group of four",
    "the color is grey",
    "i got it on sale",
]
EXPECT = [
    "i expected it to be {adj}",
    "everyone said it would be {adj}",
    "the ad promised it was {adj}",
    "i hoped the {noun} would be {adj}",
]


def opinion(rng):
    """One opinion clause: (text, score)."""
    kind = rng.rand()
    if kind < 0.12:  # verb phrase
        if rng.rand() < 0.5:
            return POS_VERB[rng.randint(len(POS_VERB))], 1.5
        return NEG_VERB[rng.randint(len(NEG_VERB))], -1.5
    if kind < 0.2:  # expectation: the sentiment word does not count
        pool = [POS1, POS2, NEG1, NEG2][rng.randint(4)]
        tpl = EXPECT[rng.randint(len(EXPECT))]
        return tpl.format(
            adj=pool[rng.randint(len(pool))], noun=NOUNS[rng.randint(len(NOUNS))]
        ), 0.0
    r = rng.rand()
    if r < 0.3:
        adj, score = POS1[rng.randint(len(POS1))], 1.0
    elif r < 0.5:
        adj, score = POS2[rng.randint(len(POS2))], 2.0
    elif r < 0.8:
        adj, score = NEG1[rng.randint(len(NEG1))], -1.0
    else:
        adj, score = NEG2[rng.randint(len(NEG2))], -2.0
    mod = rng.rand()
    words = adj
    if mod < 0.25:
        words = f"{INTENS[rng.randint(len(INTENS))]} {adj}"
        score *= 1.5
    elif mod < 0.35:
        words = f"{SOFT[rng.randint(len(SOFT))]} {adj}"
        score *= 0.5
    noun = NOUNS[rng.randint(len(NOUNS))]
    be = BE[rng.randint(len(BE))]
    negated = rng.rand() < 0.3
    if negated:  # negation flips the polarity (and weakens it)
        be = NEG_BE[be][rng.randint(2)]
        score = -0.6 * score
    style = rng.rand()
    if style < 0.7:
        return f"the {noun} {be} {words}", score
    if style < 0.85 or negated:
        return f"it {be} {words}", score
    return f"{words} {noun}", score


def review(rng):
    while True:
        parts, total = [], 0.0
        n_op = rng.randint(1, 4)
        for _ in range(n_op):
            text, score = opinion(rng)
            if parts and rng.rand() < 0.3:  # "..., but <clause>": the later clause dominates
                parts[-1] = f"{parts[-1]}, but {text}"
                total += score  # counted once more below
            else:
                parts.append(text)
            total += score
        for _ in range(rng.randint(0, 4)):
            parts.insert(rng.randint(len(parts) + 1), FILLER[rng.randint(len(FILLER))])
        if abs(total) >= 0.5:
            return ". ".join(parts) + ".", int(total > 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    rng = np.random.RandomState(args.seed)
    n = N_TRAIN + N_TEST
    texts, labels = zip(*(review(rng) for _ in range(n)), strict=True)
    labels = np.array(labels)
    flip = rng.rand(n) < LABEL_NOISE
    labels = np.where(flip, 1 - labels, labels)

    df = pd.DataFrame({"id": np.arange(n), "text": texts, "label": labels})
    train = df.iloc[:N_TRAIN].reset_index(drop=True)
    test = df.iloc[N_TRAIN:].reset_index(drop=True)
    n_val = len(test) // 2
    train.to_csv(args.public / "train.csv", index=False)
    test.drop(columns=["label"]).to_csv(args.public / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "label": 0}).to_csv(
        args.public / "sample_submission.csv", index=False
    )
    test[["id", "label"]].iloc[:n_val].to_csv(args.private / "validate.csv", index=False)
    test[["id", "label"]].iloc[n_val:].to_csv(args.private / "test.csv", index=False)


if __name__ == "__main__":
    main()
