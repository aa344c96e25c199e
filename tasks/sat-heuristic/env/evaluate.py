"""Run the DPLL solver with heuristic.py on the public instances and print the mean decisions.

Usage: python evaluate.py [path/to/heuristic.py] [path/to/instances.json]

The solver is the same as the grader's; the graded instances are private (other random 3-SAT
instances of the same kind: 30, 40 and 50 variables, 4.26 clauses per variable, half of them
satisfiable). Lower is better.
"""

import importlib.util
import json
import random
import sys
import time

MAX_DECISIONS = 3000  # per instance; an instance that needs more counts as MAX_DECISIONS


def solve(n, clauses, choose, max_decisions):
    """DPLL with unit propagation and chronological backtracking.

    choose(values) gets values[v] in {None, True, False} for v = 1..n (index 0 unused) and
    returns the literal to branch on. Returns (status, decisions), status "SAT", "UNSAT" or
    "CAPPED" (stopped after max_decisions decisions).
    """
    m = len(clauses)
    occ = {lit: [] for v in range(1, n + 1) for lit in (v, -v)}
    for i, clause in enumerate(clauses):
        for lit in clause:
            occ[lit].append(i)
    values = [None] * (n + 1)
    n_true = [0] * m  # true literals per clause
    n_false = [0] * m  # false literals per clause
    size = [len(c) for c in clauses]
    trail = []
    satisfied = 0

    def assign(first):
        """Set literal `first` and propagate units; False on a conflict."""
        nonlocal satisfied
        queue = [first]
        while queue:
            lit = queue.pop()
            v = abs(lit)
            want = lit > 0
            if values[v] is not None:
                if values[v] != want:
                    return False
                continue
            values[v] = want
            trail.append(lit)
            for ci in occ[lit]:
                n_true[ci] += 1
                if n_true[ci] == 1:
                    satisfied += 1
            conflict = False
            for ci in occ[-lit]:
                n_false[ci] += 1
                if n_true[ci] == 0:
                    if n_false[ci] == size[ci]:
                        conflict = True
                    elif n_false[ci] == size[ci] - 1:
                        for x in clauses[ci]:
                            if values[abs(x)] is None:
                                queue.append(x)
                                break
            if conflict:
                return False
        return True

    def undo(mark):
        nonlocal satisfied
        while len(trail) > mark:
            lit = trail.pop()
            values[abs(lit)] = None
            for ci in occ[lit]:
                n_true[ci] -= 1
                if n_true[ci] == 0:
                    satisfied -= 1
            for ci in occ[-lit]:
                n_false[ci] -= 1

    for clause in clauses:
        if len(clause) == 1 and not assign(clause[0]):
            return "UNSAT", 0
    decisions = 0
    stack = []  # (trail length before the decision, literal, whether it is the flipped branch)
    while True:
        if satisfied == m:
            return "SAT", decisions
        if decisions >= max_decisions:
            return "CAPPED", decisions
        lit = choose(values)
        decisions += 1
        stack.append((len(trail), lit, False))
        ok = assign(lit)
        while not ok:
            if not stack:
                return "UNSAT", decisions
            mark, lit, flipped = stack.pop()
            undo(mark)
            if not flipped:
                stack.append((mark, -lit, True))
                ok = assign(-lit)


def load_heuristic(path):
    spec = importlib.util.spec_from_file_location("heuristic", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.heuristic


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "heuristic.py"
    data = sys.argv[2] if len(sys.argv) > 2 else "instances.json"
    heuristic = load_heuristic(path)
    instances = json.load(open(data))["instances"]
    counts = []
    start = time.perf_counter()
    for k, inst in enumerate(instances):
        n, clauses = inst["n"], inst["clauses"]
        random.seed(1000 + k)

        def choose(values, n=n, clauses=clauses):
            assignment = {v: val for v, val in enumerate(values) if v and val is not None}
            lit = heuristic([list(c) for c in clauses], assignment)
            if type(lit) is not int or lit == 0 or abs(lit) > n or values[abs(lit)] is not None:
                raise ValueError(f"heuristic() returned {lit!r}: not a literal of a free variable")
            return lit

        status, decisions = solve(n, clauses, choose, MAX_DECISIONS)
        counts.append(decisions)
        print(f"instance {k + 1:2d}: n={n} {status:6s} {decisions:5d} decisions")
    print(f"time: {time.perf_counter() - start:.2f} s")
    print(f"mean decisions: {sum(counts) / len(counts):.2f}")


if __name__ == "__main__":
    main()
