"""Prepare the battle-of-sexes task: the private opponent schedules for validate and test.

python prepare.py --public DIR --private DIR --seed N

Public: a short note only (the strategy, evaluate.py and its example opponents come from env/).
Private: validate.json and test.json, each a list of games (opponent, its parameters, number of
rounds, random seed, weight). The two splits draw different round counts, parameters and
weights from the same family of opponents. The grader does not use the seeds: it draws the
opponents' random streams and the order of the games afresh for every grading.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

GAMES_PER_OPPONENT = 6
MIN_ROUNDS, MAX_ROUNDS = 60, 140


def opponent_pool(rng: random.Random) -> list[tuple[str, dict]]:
    patterns = [[1, 0], [1, 1, 0], [0, 1, 1], [1, 0, 0], [1, 1, 0, 0]]
    return [
        ("constant", {"move": 1, "noise": round(rng.uniform(0.0, 0.08), 3)}),
        ("constant", {"move": 0, "noise": round(rng.uniform(0.0, 0.08), 3)}),
        ("random", {"p_one": round(rng.uniform(0.45, 0.6), 3)}),
        ("random", {"p_one": round(rng.uniform(0.7, 0.85), 3)}),
        ("pattern", {"cycle": rng.choice(patterns), "noise": 0.0}),
        ("follower", {"noise": round(rng.uniform(0.0, 0.05), 3)}),
        ("contrarian", {"noise": round(rng.uniform(0.0, 0.05), 3)}),
        ("fictitious_play", {"window": rng.randint(8, 20), "noise": 0.0}),
        ("bully", {"patience": rng.randint(4, 10), "noise": 0.0}),
        ("fair", {"slack": rng.randint(1, 4), "noise": 0.0}),
        ("win_stay_lose_shift", {"noise": round(rng.uniform(0.0, 0.05), 3)}),
        ("turn_taker", {"noise": round(rng.uniform(0.0, 0.03), 3)}),
        ("majority", {"window": rng.choice([3, 5, 7]), "noise": round(rng.uniform(0.0, 0.05), 3)}),
    ]


def make_split(rng: random.Random) -> dict:
    games = []
    for name, params in opponent_pool(rng):
        weight = round(rng.uniform(0.5, 1.5), 3)
        for _ in range(GAMES_PER_OPPONENT):
            games.append(
                {
                    "opponent": name,
                    "params": params,
                    "rounds": rng.randint(MIN_ROUNDS, MAX_ROUNDS),
                    "seed": rng.randrange(2**31),
                    "weight": weight,
                }
            )
    return {"games": games}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    for offset, split in ((1, "validate"), (2, "test")):
        rng = random.Random(args.seed * 1000 + offset)
        data = make_split(rng)
        text = json.dumps(data, indent=1, sort_keys=True) + "\n"
        (args.private / f"{split}.json").write_text(text)

    (args.public / "README.txt").write_text(
        "Repeated battle of the sexes. Edit strategy.py (see description.md);\n"
        "`python evaluate.py` plays it against a few example opponents.\n"
        "The graded opponents are private and differ from the examples.\n"
    )


if __name__ == "__main__":
    main()
