"""Play strategy.py against a few public example opponents and print its mean payoff per round.

Usage: python evaluate.py [path/to/strategy.py]

The graded opponents are private and different; these examples only show how the game runs.
"""

import importlib.util
import random
import sys

PAYOFF = {(0, 0): 2, (1, 1): 1, (0, 1): 0, (1, 0): 0}  # (my move, their move) -> my payoff
GAMES, ROUNDS = 5, 100


# Example opponents (they prefer to meet on 1). Each sees the history as (your move, its own move).
def copycat(hist, rng):
    return hist[-1][0] if hist else 1


def stubborn(hist, rng):
    return 1


def coin_flip(hist, rng):
    return rng.randint(0, 1)


def alternator(hist, rng):
    return (len(hist) + 1) % 2


OPPONENTS = [copycat, stubborn, coin_flip, alternator]


def load_strategy(path):
    spec = importlib.util.spec_from_file_location("strategy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.strategy


def play(strategy, opponent, seed):
    rng = random.Random(seed)  # the opponent's random stream
    random.seed(seed + 1000)  # yours
    hist = []
    total = 0
    for _ in range(ROUNDS):
        mine = strategy(list(hist))
        if mine not in (0, 1):
            raise ValueError(f"strategy() must return 0 or 1, got {mine!r}")
        theirs = opponent(hist, rng)
        total += PAYOFF[mine, theirs]
        hist.append((mine, theirs))
    return total / ROUNDS


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "strategy.py"
    strategy = load_strategy(path)
    scores = []
    for opponent in OPPONENTS:
        per_game = [play(strategy, opponent, seed) for seed in range(GAMES)]
        mean = sum(per_game) / len(per_game)
        scores.append(mean)
        print(f"{opponent.__name__:>14}: {mean:.3f}")
    print(f"mean payoff per round: {sum(scores) / len(scores):.4f}")


if __name__ == "__main__":
    main()
