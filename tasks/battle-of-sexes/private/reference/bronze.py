"""Reference (bronze): insist on 0, give in to an opponent that keeps playing 1."""

from pathlib import Path

SOURCE = r'''def strategy(history):
    """Insist on 0; after 10 rounds, meet them on 1 when they played 1 three rounds running."""
    if len(history) >= 10 and all(theirs == 1 for _, theirs in history[-3:]):
        return 1
    return 0
'''

Path("strategy.py").write_text(SOURCE)
