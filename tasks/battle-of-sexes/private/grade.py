"""Grader for battle-of-sexes: strategy.py's mean payoff per round against private opponents.

The game loop is in mlagent_tui.core.tasks.grading_games, and strategy.py runs in the session's
sandbox (grading_worker); the payoff matrix and the opponents, with their random streams, stay
here, on the host.
"""

from __future__ import annotations

import os
from pathlib import Path

from mlagent_tui.taskkit import Opponent, grade_game, run_grader

# (my move, their move) -> my payoff. The submission (row player) prefers 0, the opponents prefer 1.
PAYOFF = {(0, 0): 2, (1, 1): 1, (0, 1): 0, (1, 0): 0}

# ---- opponents: each sees the history as (submission's move, own move) pairs ----------------
# Every opponent prefers to meet on 1 (it gets 2 there, 1 when both play 0, 0 on a mismatch).


class Constant(Opponent):
    """Always the same move (1: stubborn, 0: accommodating)."""

    def move(self, hist):
        return self.noisy(self.p["move"])


class RandomPlayer(Opponent):
    def move(self, hist):
        return 1 if self.rng.random() < self.p["p_one"] else 0


class Pattern(Opponent):
    def move(self, hist):
        cycle = self.p["cycle"]
        return self.noisy(cycle[len(hist) % len(cycle)])


class Follower(Opponent):
    """Plays the submission's previous move."""

    def move(self, hist):
        return self.noisy(hist[-1][0] if hist else 1)


class Contrarian(Opponent):
    """Plays the opposite of the submission's previous move."""

    def move(self, hist):
        return self.noisy(1 - hist[-1][0] if hist else 1)


class FictitiousPlay(Opponent):
    """Best response to the submission's move frequencies over the last `window` rounds."""

    def move(self, hist):
        recent = hist[-self.p["window"] :]
        ones = sum(s for s, _ in recent)
        zeros = len(recent) - ones
        return self.noisy(1 if 2 * ones >= zeros else 0)


class Bully(Opponent):
    """Insists on 1 until the submission has refused `patience` rounds in a row, then gives in."""

    refused = 0
    conceded = False

    def move(self, hist):
        if hist and not self.conceded:
            sub, own = hist[-1]
            self.refused = self.refused + 1 if (sub == 0 and own == 1) else 0
            if self.refused >= self.p["patience"]:
                self.conceded = True
        return self.noisy(0 if self.conceded else 1)


class Fair(Opponent):
    """Goes along with 0 only while the meetings on 0 do not outnumber those on 1 by > slack."""

    lead = 0

    def move(self, hist):
        if hist:
            sub, own = hist[-1]
            if sub == own:
                self.lead += 1 if sub == 0 else -1
        return self.noisy(1 if self.lead > self.p["slack"] else 0)


class WinStayLoseShift(Opponent):
    def move(self, hist):
        if not hist:
            return self.noisy(1)
        sub, own = hist[-1]
        return self.noisy(own if sub == own else 1 - own)


class TurnTaker(Opponent):
    """Takes turns: after meeting on 0 it plays 1, after meeting on 1 it plays 0."""

    def move(self, hist):
        if not hist:
            return self.noisy(1)
        sub, own = hist[-1]
        if sub == own:
            return self.noisy(1 - own)
        return self.noisy(own)


class Majority(Opponent):
    """Plays the submission's most frequent move over the last `window` rounds (ties: 1)."""

    def move(self, hist):
        recent = hist[-self.p["window"] :]
        ones = sum(s for s, _ in recent)
        return self.noisy(1 if 2 * ones >= len(recent) else 0)


OPPONENTS = {
    "constant": Constant,
    "random": RandomPlayer,
    "pattern": Pattern,
    "follower": Follower,
    "contrarian": Contrarian,
    "fictitious_play": FictitiousPlay,
    "bully": Bully,
    "fair": Fair,
    "win_stay_lose_shift": WinStayLoseShift,
    "turn_taker": TurnTaker,
    "majority": Majority,
}


def grade(submission: Path, answers_dir: Path, split: str, sandbox: str = "local") -> float:
    return grade_game(submission, answers_dir, split, PAYOFF, OPPONENTS, sandbox=sandbox)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    run_grader(grade)
