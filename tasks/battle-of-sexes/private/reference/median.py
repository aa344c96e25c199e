"""Reference (median): always play our preferred move 0."""

from pathlib import Path

SOURCE = r'''def strategy(history):
    """Always go to our preferred meeting point."""
    return 0
'''

Path("strategy.py").write_text(SOURCE)
