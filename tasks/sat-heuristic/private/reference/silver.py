"""Reference (silver): two-sided Jeroslow-Wang with the product rule."""

from pathlib import Path

SOURCE = r'''def heuristic(clauses, assignment):
    """Two-sided Jeroslow-Wang with a product: branch on the variable whose both signs matter."""
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
    def key(v):
        p, n = score.get(v, 0.0), score.get(-v, 0.0)
        return (p * n * 1024 + p + n, -v)
    best = max({abs(l) for l in score}, key=key)
    return best if score.get(best, 0.0) >= score.get(-best, 0.0) else -best
'''

Path("heuristic.py").write_text(SOURCE)
