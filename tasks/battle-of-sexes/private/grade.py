"""Grader for battle-of-sexes: strategy.py's mean payoff per round against private opponents.

The submission runs in a separate worker process (its prints, crashes, exits and hangs cannot
break the grader's JSON line); the opponents, their random streams and the scores stay here.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from mlagent_tui.core.grading import SubmissionError, run_grader

# (my move, their move) -> my payoff. The submission (row player) prefers 0, the opponents prefer 1.
PAYOFF = {(0, 0): 2, (1, 1): 1, (0, 1): 0, (1, 0): 0}
TIME_LIMIT_S = 30.0  # total for importing strategy.py and all its calls

WORKER = r"""
import importlib.util, json, os, random, sys

def main():
    proto_in = os.fdopen(os.dup(0), "r")
    proto_out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # whatever the submission prints goes to stderr
    path = sys.argv[1]
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))

    def send(obj):
        proto_out.write(json.dumps(obj) + "\n")
        proto_out.flush()

    name = os.path.basename(path)
    try:
        spec = importlib.util.spec_from_file_location("submission", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = mod
        spec.loader.exec_module(mod)
    except BaseException as exc:
        send({"error": "importing %s failed: %s: %s" % (name, type(exc).__name__, exc)})
        return
    fn = getattr(mod, "strategy", None)
    if not callable(fn):
        send({"error": "%s defines no function strategy()" % name})
        return
    send({"ready": True})
    history = []
    for line in proto_in:
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

main()
"""


class _Timeout(Exception):
    pass


class Worker:
    """strategy.py in its own process, driven one round at a time over a pipe."""

    def __init__(self, path: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path.resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(path.resolve().parent),
            text=True,
            bufsize=1,
        )

    def start(self) -> None:
        first = self._read()
        if "error" in first:
            raise SubmissionError(first["error"])

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise SubmissionError(f"strategy.py's process ended unexpectedly (exit code {code})")
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise SubmissionError("strategy.py's process sent garbage") from exc
        if not isinstance(msg, dict):
            raise SubmissionError("strategy.py's process sent garbage")
        return msg

    def play(self, last: tuple[int, int] | None, reset: int | None = None) -> int:
        msg: dict = {"last": last}
        if reset is not None:
            msg["reset"] = reset
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise SubmissionError("strategy.py's process ended unexpectedly") from exc
        reply = self._read()
        if "error" in reply:
            raise SubmissionError(str(reply["error"]))
        if "bad" in reply:
            raise SubmissionError(f"strategy() must return 0 or 1, got {reply['bad']}")
        move = reply.get("move")
        if type(move) is not int or move not in (0, 1):
            raise SubmissionError(f"strategy() must return 0 or 1, got {move!r}")
        return move

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# ---- opponents: each sees the history as (submission's move, own move) pairs ----------------
# Every opponent prefers to meet on 1 (it gets 2 there, 1 when both play 0, 0 on a mismatch).


class Opponent:
    def __init__(self, params: dict, rng: random.Random):
        self.p = params
        self.rng = rng

    def noisy(self, move: int) -> int:
        noise = self.p.get("noise", 0.0)
        if noise and self.rng.random() < noise:
            return 1 - move
        return move

    def move(self, hist: list[tuple[int, int]]) -> int:
        raise NotImplementedError


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


def play_all(worker: Worker, games: list[dict]) -> float:
    """Weighted mean over games of the submission's mean payoff per round."""
    total_w = 0.0
    total = 0.0
    for g in games:
        rng = random.Random(g["seed"])
        opp = OPPONENTS[g["opponent"]](g["params"], rng)
        hist: list[tuple[int, int]] = []
        payoff = 0
        last = None
        for t in range(g["rounds"]):
            # the strategy's own random stream is seeded apart from the opponent's
            mine = worker.play(last, reset=(g["seed"] * 7919 + 1) % 2**31 if t == 0 else None)
            theirs = opp.move(hist)
            payoff += PAYOFF[mine, theirs]
            last = (mine, theirs)
            hist.append(last)
        total += g["weight"] * payoff / g["rounds"]
        total_w += g["weight"]
    return total / total_w


def grade(submission: Path, answers_dir: Path, split: str) -> float:
    games = json.loads((answers_dir / f"{split}.json").read_text())["games"]

    def on_alarm(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    worker = None
    try:
        worker = Worker(submission)
        worker.start()
        return play_all(worker, games)
    except _Timeout:
        raise SubmissionError(
            f"strategy.py took longer than {TIME_LIMIT_S:.0f} s in total (import and all calls)"
        ) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if worker is not None:
            worker.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    run_grader(grade)
