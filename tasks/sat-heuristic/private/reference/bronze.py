"""Reference (bronze): one-sided Jeroslow-Wang on the clauses not yet satisfied."""

from pathlib import Path

SOURCE = r'''def heuristic(clauses, assignment):
    """Jeroslow-Wang (one-sided): literal maximising sum of 2^-|clause| over unsatisfied clauses."""
    score = {}
    for clause in clauses:
        free = []
        for lit in clause:
            v = abs(lit)
            if v in assignment:
                if assignment[v] == (lit > 0):
                    break
            else:
                free.append(lit)
        else:
            w = 2.0 ** -len(free)
            for lit in free:
                score[lit] = score.get(lit, 0.0) + w
    if not score:
        return min(v for v in range(1, len(assignment) + 2) if v not in assignment)
    return max(score, key=lambda lit: (score[lit], -abs(lit), lit))
'''

Path("heuristic.py").write_text(SOURCE)
