"""A repeated two-player 0/1 game, for the graders of the game tasks.

The submission's `strategy(history)` runs in a worker in the session's sandbox (grading_worker)
and plays rounds against private opponents, which stay on the host: each task keeps its payoff
matrix and its opponents in its grade.py.
The score is the weighted mean over games of the submission's mean payoff per round.

Nothing the worker receives derives from the split: every grading draws afresh, from the
operating system's randomness, the order of the games, each opponent's random stream and the
value that reseeds the strategy's own `random` before a game. The split's seeds, which follow
from the session seed, never reach an opponent or the worker; a strategy cannot rebuild the
stream a noisy or random opponent plays from, nor tell an opponent by the game's position.
A score is therefore an estimate: each game is played PLAYS_PER_GAME times to narrow it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from .grading import SubmissionError
from .grading_worker import WORKER_PRELUDE, Worker, worker_pool

PLAYS_PER_GAME = 3  # each game of the split is played this often, each time on a fresh stream
TIME_LIMIT_S = 30.0 * PLAYS_PER_GAME  # total for importing strategy.py and all its calls

Move = tuple[int, int]  # (submission's move, opponent's move)

_STRATEGY_MAIN = r"""
def main():
    loaded = load_submission("strategy")
    if loaded is None:
        return
    fn, requests, send = loaded
    history = []
    for line in requests:
        msg = json.loads(line)
        if "reset" in msg:
            history = []
            random.seed(msg["reset"])
            np = sys.modules.get("numpy")
            if np is not None:
                np.random.seed(msg["reset"] % 2**32)
        if msg.get("last") is not None:
            history.append(tuple(msg["last"]))
        try:
            move = fn(list(history))
        except BaseException as exc:
            send({"error": "strategy() raised %s: %s (round %d of a game)"
                  % (type(exc).__name__, exc, len(history) + 1)})
            return
        if isinstance(move, bool) or (
            type(move).__module__ == "numpy" and hasattr(move, "__index__")
        ):
            move = int(move)
        if type(move) is int:
            send({"move": move})
        else:
            send({"bad": "%s %s (round %d of a game)"
                  % (type(move).__name__, repr(move)[:60], len(history) + 1)})


serve(main)
"""

WORKER = WORKER_PRELUDE + _STRATEGY_MAIN


class Opponent:
    """A private opponent; it sees the history as (submission's move, own move) pairs."""

    def __init__(self, params: dict[str, Any], rng: random.Random):
        self.p = params
        self.rng = rng

    def noisy(self, move: int) -> int:
        noise = self.p.get("noise", 0.0)
        if noise and self.rng.random() < noise:
            return 1 - move
        return move

    def move(self, hist: list[Move]) -> int:
        raise NotImplementedError


def play(worker: Worker, last: Move | None, reset: int | None = None) -> int:
    """One round: send the previous round (and a new game's seed), get the submission's move."""
    msg: dict[str, Any] = {"last": last}
    if reset is not None:
        msg["reset"] = reset
    reply = worker.request(msg)
    if "bad" in reply:
        raise SubmissionError(f"strategy() must return 0 or 1, got {reply['bad']}")
    move = reply.get("move")
    if type(move) is not int or move not in (0, 1):
        raise SubmissionError(f"strategy() must return 0 or 1, got {move!r}")
    return move


def play_all(
    worker: Worker,
    games: list[dict[str, Any]],
    payoff: dict[Move, float],
    opponents: dict[str, type[Opponent]],
) -> float:
    """Weighted mean over games of the submission's mean payoff per round.

    Each game is played PLAYS_PER_GAME times, all plays in a fresh secret order, each opponent
    on a fresh secret stream, each play reseeding the strategy with a fresh secret value: a
    split's score is an estimate, not a replay (a game's `seed` in the split is not used).
    """
    fresh = random.SystemRandom()
    order = [g for g in games for _ in range(PLAYS_PER_GAME)]
    fresh.shuffle(order)
    total_w = 0.0
    total = 0.0
    for g in order:
        rng = random.Random(fresh.getrandbits(128))
        opp = opponents[g["opponent"]](g["params"], rng)
        hist: list[Move] = []
        score = 0
        last = None
        for t in range(g["rounds"]):
            # the strategy's own seed is independent of the opponent's stream and of the split
            mine = play(worker, last, reset=fresh.randrange(2**31) if t == 0 else None)
            theirs = opp.move(hist)
            score += payoff[mine, theirs]
            last = (mine, theirs)
            hist.append(last)
        total += g["weight"] * score / g["rounds"]
        total_w += g["weight"]
    return total / total_w


def grade_game(
    submission: Path,
    answers_dir: Path,
    split: str,
    payoff: dict[Move, float],
    opponents: dict[str, type[Opponent]],
    *,
    sandbox: str,
) -> float:
    """Play the split's games (`<answers_dir>/<split>.json`) with strategy.py in a worker that
    runs in `sandbox`, the session's backend."""
    games = json.loads((answers_dir / f"{split}.json").read_text())["games"]
    message = f"strategy.py took longer than {TIME_LIMIT_S:.0f} s in total (import and all calls)"
    with worker_pool(TIME_LIMIT_S, message, sandbox=sandbox) as pool:
        worker = pool.start(WORKER, submission, label="strategy.py")
        return play_all(worker, games, payoff, opponents)
