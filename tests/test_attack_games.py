"""Attacks on what a code task's grader sends the agent's code: nothing it receives (a game's
reset value, the order of the games, a timed input) may let it rebuild the private opponent's
random stream, the schedule of the split or the inputs before it is sent them.

Each attack runs the real grader through the task's grade path and must score like an honest
submission; the harness tests read exactly what the game loop sends a worker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlagent_tui.core.tasks import BUNDLED_TASKS, Task, grading_games

from .conftest import bwrap_ready
from .test_code_graders import grader_module

pytestmark = [
    pytest.mark.adversarial,
    pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing"),
]

INV = pow(7919, -1, 2**31)  # inverts the reset value that was (seed * 7919 + 1) % 2**31


def prepared(tmp_path: Path, name: str) -> tuple[Task, Path, Path]:
    task = Task(BUNDLED_TASKS / name)
    ws, pv = tmp_path / "ws", tmp_path / "pv"
    task.prepare(ws, pv)  # the default session seed, which an agent can guess
    return task, ws, pv


def grade_code(task: Task, ws: Path, pv: Path, code: str) -> float:
    (ws / task.spec.submission.file).write_text(code)
    g = task.grade(ws, pv, "test", sandbox="local")
    assert g.valid and g.score is not None, g.error
    return g.score


def reference_source(name: str, level: str) -> str:
    """The strategy a reference script writes (its SOURCE)."""
    text = (BUNDLED_TASKS / name / "private" / "reference" / f"{level}.py").read_text()
    return text.split("SOURCE = r'''", 1)[1].split("'''", 1)[0]


# -- battle-of-sexes: a strategy that rebuilds each opponent and its random stream ---------------
# It reads the reset value the worker received (the worker's own frame), inverts it to the seed of
# the opponent's stream, takes the opponent's kind from the game's position (prepare.py lists the
# games by opponent, 6 each, in a fixed order), and keeps every parameter of that kind that the
# play so far agrees with. It meets a simulated opponent's next move exactly, or leads a follower
# to 0; once no simulation agrees with the play, it falls back to the honest silver strategy.
ORACLE = r'''
import random
import sys

INV = pow(7919, -1, 2**31)
KINDS = ["constant1", "constant0", "random_lo", "random_hi", "pattern", "follower", "contrarian",
         "fictitious_play", "bully", "fair", "win_stay_lose_shift", "turn_taker", "majority"]
LEAD = {"follower", "fictitious_play", "bully", "win_stay_lose_shift", "majority"}


def grid(lo, hi):
    return [k / 1000 for k in range(round(lo * 1000), round(hi * 1000) + 1)]


def candidates(kind):
    if kind in ("constant1", "constant0"):
        return [("constant", {"move": int(kind[-1]), "noise": n}) for n in grid(0, 0.08)]
    if kind.startswith("random"):
        lo, hi = (0.45, 0.6) if kind == "random_lo" else (0.7, 0.85)
        return [("random", {"p_one": p}) for p in grid(lo, hi)]
    if kind == "pattern":
        cycles = [[1, 0], [1, 1, 0], [0, 1, 1], [1, 0, 0], [1, 1, 0, 0]]
        return [("pattern", {"cycle": c}) for c in cycles]
    if kind == "fictitious_play":
        return [(kind, {"window": w}) for w in range(8, 21)]
    if kind == "bully":
        return [(kind, {"patience": p}) for p in range(4, 11)]
    if kind == "fair":
        return [(kind, {"slack": s}) for s in range(1, 5)]
    if kind == "majority":
        return [(kind, {"window": w, "noise": n}) for w in (3, 5, 7) for n in grid(0, 0.05)]
    top = 0.03 if kind == "turn_taker" else 0.05
    return [(kind, {"noise": n}) for n in grid(0, top)]


class Sim:
    """The private opponents of grade.py, run on the stream the reset value gives away."""

    def __init__(self, kind, p, seed):
        self.kind, self.p, self.rng = kind, p, random.Random(seed)
        self.refused, self.conceded, self.lead = 0, False, 0

    def noisy(self, m):
        n = self.p.get("noise", 0.0)
        return 1 - m if n and self.rng.random() < n else m

    def move(self, h):
        k, p = self.kind, self.p
        if k == "constant":
            return self.noisy(p["move"])
        if k == "random":
            return 1 if self.rng.random() < p["p_one"] else 0
        if k == "pattern":
            return p["cycle"][len(h) % len(p["cycle"])]
        if k == "follower":
            return self.noisy(h[-1][0] if h else 1)
        if k == "contrarian":
            return self.noisy(1 - h[-1][0] if h else 1)
        if k in ("fictitious_play", "majority"):
            r = h[-p["window"]:]
            ones = sum(s for s, _ in r)
            if k == "majority":
                return self.noisy(1 if 2 * ones >= len(r) else 0)
            return 1 if 2 * ones >= len(r) - ones else 0
        if k == "bully":
            if h and not self.conceded:
                s, o = h[-1]
                self.refused = self.refused + 1 if (s == 0 and o == 1) else 0
                self.conceded = self.refused >= p["patience"]
            return 0 if self.conceded else 1
        if k == "fair":
            if h and h[-1][0] == h[-1][1]:
                self.lead += 1 if h[-1][0] == 0 else -1
            return 1 if self.lead > p["slack"] else 0
        if not h:
            return self.noisy(1)
        s, o = h[-1]
        if k == "win_stay_lose_shift":
            return self.noisy(o if s == o else 1 - o)
        return self.noisy((1 - o) if s == o else o)  # turn_taker


def silver(history):
    t = len(history)
    if t < 10:
        return 0
    stats = {0: [0, 0], 1: [0, 0]}
    for i in range(max(1, t - 20), t):
        s = stats[history[i - 1][0]]
        s[0] += history[i][1]
        s[1] += 1
    ones, n = stats[history[-1][0]]
    return 1 if (ones / n if n else 0.5) > 2 / 3 else 0


G = {"game": -1, "live": [], "kind": None}


def strategy(history):
    if not history:
        reset = sys._getframe(1).f_locals["msg"]["reset"]
        seed = ((reset - 1) * INV) % 2**31
        G["game"] += 1
        kind = KINDS[G["game"] // 6] if G["game"] < 6 * len(KINDS) else None
        G["kind"] = kind
        G["live"] = [Sim(k, p, seed) for k, p in candidates(kind)] if kind else []
    elif G["live"]:
        G["live"] = [s for s in G["live"] if s.pred == history[-1][1]]
    if not G["live"]:
        return silver(history)
    votes = 0
    for s in G["live"]:
        s.pred = s.move(history)
        votes += s.pred
    if G["kind"] in LEAD:
        return 0
    return 1 if 2 * votes > len(G["live"]) else 0
'''


def test_a_strategy_cannot_rebuild_the_opponents_stream(tmp_path: Path) -> None:
    task, ws, pv = prepared(tmp_path, "battle-of-sexes")
    honest = grade_code(task, ws, pv, reference_source("battle-of-sexes", "silver"))
    attack = grade_code(task, ws, pv, ORACLE)
    # where the reset value and the order give the opponents away it scores 1.60 against silver's
    # 1.37 (gold 1.40); otherwise it falls back to silver's logic once its simulations disagree
    assert attack <= honest + 0.03, (attack, honest)
    assert attack < task.spec.thresholds.gold, attack


# -- the game loop: what a worker receives carries nothing of the split ---------------------------
class Recorder:
    """Stands in for the worker: records every request, answers 0."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def request(self, msg: dict) -> dict:
        self.sent.append(msg)
        return {"move": 0}


def observed(games: list[dict], name: str) -> tuple[list[int], list[int]]:
    """The reset values and the game lengths a strategy sees, in the order it sees them."""
    grader = grader_module(name)
    worker = Recorder()
    grading_games.play_all(worker, games, grader.PAYOFF, grader.OPPONENTS)  # type: ignore[arg-type]
    starts = [i for i, m in enumerate(worker.sent) if "reset" in m]
    lengths = [b - a for a, b in zip(starts, starts[1:] + [len(worker.sent)], strict=True)]
    return [worker.sent[i]["reset"] for i in starts], lengths


@pytest.mark.parametrize("name", ["battle-of-sexes", "prisoners-dilemma"])
def test_the_worker_learns_nothing_of_the_split(tmp_path: Path, name: str) -> None:
    _, _, pv = prepared(tmp_path, name)
    games = json.loads((pv / "test.json").read_text())["games"]
    seeds = {g["seed"] for g in games}
    in_order = [g["rounds"] for g in games for _ in range(grading_games.PLAYS_PER_GAME)]
    resets, lengths = observed(games, name)
    again, lengths_again = observed(games, name)
    assert len(resets) == len(in_order) and sorted(lengths) == sorted(in_order)
    # no reset value is, or inverts to, a game's seed
    assert not seeds & ({r for r in resets} | {((r - 1) * INV) % 2**31 for r in resets})
    # the order of the games is drawn afresh: neither the split's nor the same twice
    assert lengths != in_order
    assert lengths != lengths_again
    assert not set(resets) & set(again)


# -- code-speedup: a submission that knows every timed input in advance --------------------------
# prepare.py draws the split's seeds from the session seed (the default, 0, here); the grader
# timed inputs made from those seeds and from extra seeds computed from the first of them. The
# submission replays both at import, untimed, and answers every timed call from its cache.
PRECOMPUTE = r"""
import random as _r
import numpy as _np

SHAPE = {"H": 48, "W": 48, "C": 3, "F": 12, "K": 3}


def _make_input(seed, H, W, C, F, K):
    rng = _r.Random(seed)
    image = [[[rng.uniform(-1, 1) for _ in range(C)] for _ in range(W)] for _ in range(H)]
    kernels = [[[[rng.gauss(0, 0.3) for _ in range(C)] for _ in range(K)] for _ in range(K)]
               for _ in range(F)]
    return {"image": image, "kernels": kernels, "bias": [rng.uniform(-0.1, 0.1) for _ in range(F)]}


def _fast(data):
    image, kernels = _np.asarray(data["image"]), _np.asarray(data["kernels"])
    bias = _np.asarray(data["bias"])
    H, W, _ = image.shape
    F, K = kernels.shape[:2]
    oh, ow = H - K + 1, W - K + 1
    conv = _np.broadcast_to(bias, (oh, ow, F)).copy()
    for di in range(K):
        for dj in range(K):
            conv += image[di:di + oh, dj:dj + ow, :] @ kernels[:, di, dj, :].T
    _np.maximum(conv, 0.0, out=conv)
    return conv[:oh // 2 * 2, :ow // 2 * 2].reshape(oh // 2, 2, ow // 2, 2, F).max(axis=(1, 3))


_rng = _r.Random(0)
_rng.randrange(2**31)  # the public example
_seeds = [_rng.randrange(2**31) for _ in range(12)]  # validate, then test
_all = list(_seeds)
for _first in (_seeds[0], _seeds[6]):
    _all += [(_first * 7919 + r * 40 + k) % 2**31 for r in range(6) for k in range(1, 7)]
_CACHE = {}
for _s in _all:
    _d = _make_input(_s, **SHAPE)
    _CACHE[repr(_d["bias"])] = _fast(_d)
"""

CACHED = r"""
_slow_compute = compute


def compute(data):
    hit = _CACHE.get(repr(data["bias"]))
    return hit if hit is not None else _slow_compute(data)
"""


def test_compute_cannot_know_the_timed_inputs_in_advance(tmp_path: Path) -> None:
    task, ws, pv = prepared(tmp_path, "code-speedup")
    slow = (BUNDLED_TASKS / "code-speedup" / "env" / "compute.py").read_text()
    score = grade_code(task, ws, pv, PRECOMPUTE + slow + CACHED)
    # where the inputs follow from the split's seeds it scores about 280; the original's own
    # timing moves by up to 1.6x on a busy machine, so the bar is bronze (2.5), not 1.0
    assert score < task.spec.thresholds.bronze, score


def test_speedup_inputs_are_fresh_every_grading() -> None:
    grader = grader_module("code-speedup")
    shape = {"H": 6, "W": 6, "C": 1, "F": 2, "K": 3}
    first = [grader.fresh_input(shape) for _ in range(3)]
    second = [grader.fresh_input(shape) for _ in range(3)]
    raws = [t.raw for t in first + second]
    assert len(set(raws)) == len(raws)
