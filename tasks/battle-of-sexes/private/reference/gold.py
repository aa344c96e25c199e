"""Reference (gold): insist on 0 in an opening, detect fixed cycles, otherwise learn the
opponent's response model online and plan against it with value iteration."""

from pathlib import Path

SOURCE = r'''"""Model-based play: an opening on 0, cycle detection, then planning on a model."""

STATES = [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
_g = {"n": -1}


def _reset():
    _g.update(n=0, c3={}, c2={}, c1={}, V={s: 0.0 for s in STATES})


def _bump(d, k, zero):
    c = d.setdefault(k, [0, 0])
    c[0] += zero
    c[1] += 1


def _q(p, s, V, gamma):
    """Values of playing 0 and 1 in context s when they play 0 with probability p."""
    q0 = p * (2 + gamma * V[(s[1], 0, 0)]) + (1 - p) * (gamma * V[(s[1], 0, 1)])
    q1 = p * (gamma * V[(s[1], 1, 0)]) + (1 - p) * (1 + gamma * V[(s[1], 1, 1)])
    return q0, q1


def strategy(history, gamma=0.9, w=1.0, iters=8, insist=10):
    t = len(history)
    if t == 0 or t < _g["n"]:
        _reset()
    # context of round i: (my move i-2, my move i-1, their move i-1)
    for i in range(max(_g["n"], 1), t):
        s = (history[i - 2][0] if i >= 2 else 0, history[i - 1][0], history[i - 1][1])
        zero = history[i][1] == 0
        _bump(_g["c3"], s, zero)
        _bump(_g["c2"], s[1:], zero)
        _bump(_g["c1"], s[1], zero)
    _g["n"] = t
    if t < insist:
        return 0  # opening: insist on our meeting point for a while
    theirs = [h[1] for h in history]
    for k in (1, 2, 3, 4):
        if t >= 3 * k + 3 and all(theirs[i] == theirs[i - k] for i in range(t - 2 * k - 3, t)):
            return theirs[t - k]  # they repeat a fixed cycle: meet them where they will be
    c1, c2, c3 = _g["c1"], _g["c2"], _g["c3"]
    # P(they play 0 | context), smoothed: full context -> last moves -> my last move -> follower
    pc = {}
    for s in STATES:
        k = c1.get(s[1], (0, 0))
        p1 = (k[0] + w * (0.9 if s[1] == 0 else 0.1)) / (k[1] + w)
        k = c2.get(s[1:], (0, 0))
        p2 = (k[0] + w * p1) / (k[1] + w)
        k = c3.get(s, (0, 0))
        pc[s] = (k[0] + w * p2) / (k[1] + w)
    V = _g["V"]
    for _ in range(iters):
        V = {s: max(_q(pc[s], s, V, gamma)) for s in STATES}
    _g["V"] = V
    s = (history[-2][0] if t >= 2 else 0, history[-1][0], history[-1][1])
    q0, q1 = _q(pc[s], s, V, gamma)
    return 0 if q0 >= q1 else 1
'''

Path("strategy.py").write_text(SOURCE)
