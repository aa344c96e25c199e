"""Reference (median): plain tit-for-tat."""

from pathlib import Path

SOURCE = r'''def strategy(history):
    """Tit-for-tat: cooperate first, then copy the opponent's last move."""
    return history[-1][1] if history else 0
'''

Path("strategy.py").write_text(SOURCE)
