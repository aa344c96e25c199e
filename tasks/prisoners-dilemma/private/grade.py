"""Grader for prisoners-dilemma: strategy.py's mean payoff per round against private opponents.

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

# (my move, their move) -> my payoff; 0 = cooperate, 1 = defect
PAYOFF = {(0, 0): 3, (0, 1): 0, (1, 0): 5, (1, 1): 1}
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
