"""Reference (bronze): tit-for-tat that turns to always-defect against opponents who do not
punish defections (random, fixed-pattern and unconditional players)."""

from pathlib import Path

SOURCE = r"""def strategy(history):
    # tit-for-tat that checks whether the opponent ever punishes a defection
    t = len(history)
    if t == 0:
        return 0
    if t >= 12:
        punished = sum(1 for i in range(1, t) if history[i - 1][0] == 1 and history[i][1] == 1)
        mine = sum(1 for i in range(1, t) if history[i - 1][0] == 1)
        if mine >= 3 and punished <= mine // 2:
            return 1
    return history[-1][1]
"""

Path("strategy.py").write_text(SOURCE)
