"""Grader for prisoners-dilemma: strategy.py's mean payoff per round against private opponents.

The game loop is in mlagent_tui.core.tasks.grading_games, and strategy.py runs in the session's
sandbox (grading_worker); the payoff matrix and the opponents, with their random streams, stay
here, on the host.
"""

from __future__ import annotations

import os
from pathlib import Path

from mlagent_tui.taskkit import Opponent, grade_game, run_grader

# (my move, their move) -> my payoff; 0 = cooperate, 1 = defect
PAYOFF = {(0, 0): 3, (0, 1): 0, (1, 0): 5, (1, 1): 1}

# ---- opponents: each sees the history as (submission's move, own move) pairs ----------------


class AlwaysCooperate(Opponent):
    def move(self, hist):
        return self.noisy(0)


class AlwaysDefect(Opponent):
    def move(self, hist):
        return self.noisy(1)


class RandomPlayer(Opponent):
    def move(self, hist):
        return 0 if self.rng.random() < self.p["p_coop"] else 1


class Pattern(Opponent):
    def move(self, hist):
        cycle = self.p["cycle"]
        return self.noisy(cycle[len(hist) % len(cycle)])


class TitForTat(Opponent):
    def move(self, hist):
        if not hist:
            return self.noisy(self.p.get("first", 0))
        return self.noisy(hist[-1][0])


class GenerousTitForTat(Opponent):
    def move(self, hist):
        if hist and hist[-1][0] == 1 and self.rng.random() >= self.p["forgive"]:
            return 1
        return 0


class TitForTwoTats(Opponent):
    def move(self, hist):
        return self.noisy(1 if len(hist) >= 2 and hist[-1][0] == 1 and hist[-2][0] == 1 else 0)


class Grim(Opponent):
    triggered = False

    def move(self, hist):
        if hist and hist[-1][0] == 1:
            self.triggered = True
        return self.noisy(1 if self.triggered else 0)


class Pavlov(Opponent):
    def move(self, hist):
        if not hist:
            return self.noisy(0)
        sub, own = hist[-1]
        return self.noisy(own if sub == 0 else 1 - own)


class Prober(Opponent):
    def move(self, hist):
        t = len(hist)
        if t < 3:
            return (1, 0, 0)[t]
        if hist[1][0] == 0 and hist[2][0] == 0:
            return 1
        return hist[-1][0]


class Gradual(Opponent):
    defections = 0
    punish = 0
    calm = 0

    def move(self, hist):
        if hist and hist[-1][0] == 1 and self.punish == 0 and self.calm == 0:
            self.defections += 1
            self.punish = self.defections
            self.calm = 2
        if self.punish:
            self.punish -= 1
            return 1
        if self.calm:
            self.calm -= 1
        return 0


class SoftMajority(Opponent):
    def move(self, hist):
        defects = sum(s for s, _ in hist)
        return self.noisy(0 if defects * 2 <= len(hist) else 1)


OPPONENTS = {
    "always_cooperate": AlwaysCooperate,
    "always_defect": AlwaysDefect,
    "random": RandomPlayer,
    "pattern": Pattern,
    "tit_for_tat": TitForTat,
    "generous_tit_for_tat": GenerousTitForTat,
    "tit_for_two_tats": TitForTwoTats,
    "grim": Grim,
    "pavlov": Pavlov,
    "prober": Prober,
    "gradual": Gradual,
    "soft_majority": SoftMajority,
}


def grade(submission: Path, answers_dir: Path, split: str, sandbox: str = "local") -> float:
    return grade_game(submission, answers_dir, split, PAYOFF, OPPONENTS, sandbox=sandbox)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    run_grader(grade)
