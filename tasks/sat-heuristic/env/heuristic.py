"""Your branching heuristic for a DPLL SAT solver.

heuristic(clauses, assignment) is called at every decision of the solver.
- clauses: the whole formula (it does not shrink during the search), a list of clauses, each a
  list of non-zero ints in DIMACS style: 3 means x3, -3 means NOT x3.
- assignment: dict {variable: bool} of the variables set so far (by earlier decisions and by unit
  propagation). At least one variable is unassigned and no clause is falsified.
Return a literal (int) of an unassigned variable: +v to try x_v = True first, -v to try False
first. The solver then propagates units and backtracks on conflicts; fewer decisions is better.

The baseline below picks the lowest-numbered unassigned variable and tries True first.
"""


def heuristic(clauses, assignment):
    v = 1
    while v in assignment:
        v += 1
    return v
