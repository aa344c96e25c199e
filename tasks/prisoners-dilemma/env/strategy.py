"""Your strategy for the repeated prisoner's dilemma.

strategy(history) is called once per round. history is a list of (my_move, their_move) tuples,
one per round played so far in the current game (empty on the first round). Moves: 0 = cooperate,
1 = defect. Return 0 or 1.

Payoffs per round (mine, theirs): both cooperate 3/3, both defect 1/1,
I defect while they cooperate 5/0, I cooperate while they defect 0/5.

The baseline below always cooperates.
"""


def strategy(history):
    return 0
