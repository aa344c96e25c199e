"""Reference (silver): predict the opponent's next move from how it answered our last move
(over a recent window) and best-respond to that prediction."""

from pathlib import Path

SOURCE = r'''def strategy(history):
    """After an opening on 0, predict their next move from how they answered our last move."""
    t = len(history)
    if t < 10:
        return 0
    # their move right after we played m, counted over the last 20 rounds: {m: [ones, total]}
    stats = {0: [0, 0], 1: [0, 0]}
    for i in range(max(1, t - 20), t):
        s = stats[history[i - 1][0]]
        s[0] += history[i][1]
        s[1] += 1
    ones, n = stats[history[-1][0]]
    p_one = ones / n if n else 0.5
    # meeting on 0 pays 2, on 1 pays 1: go to 1 only when they are at least twice as likely there
    return 1 if p_one > 2 / 3 else 0
'''

Path("strategy.py").write_text(SOURCE)
