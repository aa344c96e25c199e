"""Your strategy for the repeated battle of the sexes.

strategy(history) is called once per round. history is a list of (my_move, their_move) tuples,
one per round played so far in the current game (empty on the first round). Moves are 0 or 1.
Return 0 or 1.

Payoffs per round (mine, theirs): both play 0 -> 2/1, both play 1 -> 1/2, a mismatch -> 0/0.
You prefer to meet on 0, the opponent prefers to meet on 1.

The baseline below flips a fair coin.
"""

import random


def strategy(history):
    return random.randint(0, 1)
