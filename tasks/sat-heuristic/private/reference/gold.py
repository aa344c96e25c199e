"""Reference (gold): unit-propagation lookahead on the best Jeroslow-Wang candidates, with
the product rule and failed-literal detection."""

from pathlib import Path

SOURCE = r'''def _reduce(clauses, assignment):
    """The unsatisfied clauses restricted to their free literals."""
    reduced = []
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
            reduced.append(free)
    return reduced


def heuristic(clauses, assignment, candidates=20):
    """Lookahead: propagate both signs of the best Jeroslow-Wang candidates and branch on the
    variable whose two sides shrink the formula most (product rule). A side that fails
    outright is a failed literal: take the other side at once."""
    reduced = _reduce(clauses, assignment)
    occ = {}
    jw = {}
    for i, c in enumerate(reduced):
        w = 2.0 ** -len(c)
        for lit in c:
            occ.setdefault(lit, []).append(i)
            jw[lit] = jw.get(lit, 0.0) + w
    free_vars = sorted({abs(lit) for lit in jw})

    def jw_key(v):
        p, n = jw.get(v, 0.0), jw.get(-v, 0.0)
        return p * n * 1024 + p + n

    cands = sorted(free_vars, key=lambda v: (-jw_key(v), v))[:candidates]

    def propagate(lit):
        """Reduction score of setting lit (None on a conflict)."""
        val = {abs(lit): lit > 0}
        queue = [lit]
        new_binary = 0.0
        while queue:
            x = queue.pop()
            for ci in occ.get(-x, ()):
                free = None
                nfree = 0
                for y in reduced[ci]:
                    vy = abs(y)
                    if vy in val:
                        if val[vy] == (y > 0):
                            break
                    else:
                        nfree += 1
                        free = y
                else:
                    if nfree == 0:
                        return None
                    if nfree == 1:
                        if abs(free) not in val:
                            val[abs(free)] = free > 0
                            queue.append(free)
                    elif nfree == 2:
                        new_binary += 1.0
        return len(val) + new_binary

    best, best_score = None, -1.0
    for v in cands:
        pos, neg = propagate(v), propagate(-v)
        if pos is None and neg is None:
            return v
        if pos is None:
            return -v
        if neg is None:
            return v
        score = pos * neg * 1024 + pos + neg
        if score > best_score:
            best_score = score
            best = v if jw.get(v, 0.0) >= jw.get(-v, 0.0) else -v
    return best
'''

Path("heuristic.py").write_text(SOURCE)
