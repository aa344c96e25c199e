"""Reference (median): a static order, the most frequent variable of the whole formula."""

from pathlib import Path

SOURCE = r'''def heuristic(clauses, assignment):
    """Most frequent unassigned variable in the whole formula, with its more frequent sign."""
    count = {}
    for clause in clauses:
        for lit in clause:
            count[lit] = count.get(lit, 0) + 1
    best = max((v for v in {abs(l) for l in count} if v not in assignment),
               key=lambda v: (count.get(v, 0) + count.get(-v, 0), -v))
    return best if count.get(best, 0) >= count.get(-best, 0) else -best
'''

Path("heuristic.py").write_text(SOURCE)
