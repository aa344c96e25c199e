"""Grader for sat-heuristic: mean number of DPLL decisions with heuristic.py's branching choice.

heuristic.py runs in a worker in the session's sandbox (mlagent_tui.taskkit.worker_pool: its
prints, crashes, exits and hangs cannot break the grader's JSON line, and it sees each instance
only when asked about it) together with a copy of the DPLL solver, which asks it for a literal at
every decision. The worker reports the literals chosen for each instance; the grader then
replays the search with its own solver on the host, checks every choice and counts the decisions
itself. The score is the mean number of decisions per instance; lower is better.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

from mlagent_tui.taskkit import WORKER_PRELUDE, SubmissionError, Worker, run_grader, worker_pool

MAX_DECISIONS = 3000  # per instance; an instance that needs more counts as MAX_DECISIONS
TIME_LIMIT_S = 30.0  # total for importing heuristic.py and all its calls


_HEURISTIC_MAIN = r"""
class Bad(Exception):
    pass


def main():
    loaded = load_submission("heuristic")
    if loaded is None:
        return
    fn, requests, send = loaded
    for line in requests:
        msg = json.loads(line)
        n, clauses, where = msg["n"], msg["clauses"], "instance %d" % msg["index"]
        random.seed(msg["seed"])
        np = sys.modules.get("numpy")
        if np is not None:
            np.random.seed(msg["seed"] % 2**32)
        chosen = []

        def choose(values):
            assignment = {v: val for v, val in enumerate(values) if v and val is not None}
            try:
                lit = fn([list(c) for c in clauses], assignment)
            except BaseException as exc:
                raise Bad("heuristic() raised %s: %s (%s)" % (type(exc).__name__, exc, where))
            if type(lit).__module__ == "numpy" and getattr(lit, "ndim", 1) == 0:
                if lit.dtype.kind in "iu":
                    lit = int(lit)  # a numpy integer scalar
            if type(lit) is not int or lit == 0 or abs(lit) > n:
                raise Bad("heuristic() must return a literal +v or -v of a variable v in 1..%d, "
                          "got %s %s (%s)" % (n, type(lit).__name__, repr(lit)[:60], where))
            if values[abs(lit)] is not None:
                raise Bad("heuristic() returned %d, but variable %d is already assigned (%s)"
                          % (lit, abs(lit), where))
            chosen.append(lit)
            return lit

        try:
            solve(n, clauses, choose, msg["max_decisions"])
        except Bad as exc:
            send({"error": str(exc)})
            return
        send({"lits": chosen})


serve(main)
"""


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


# the worker runs the very same solve(), sent as source
WORKER = WORKER_PRELUDE + inspect.getsource(solve) + _HEURISTIC_MAIN


def run(worker: Worker, request: dict) -> list:
    """Have the worker search one instance; return the literals heuristic() chose."""
    lits = worker.request(request).get("lits")
    if not isinstance(lits, list):
        raise worker.garbage()
    return lits


def replay(n: int, clauses: list, lits: list, index: int) -> int:
    """Re-run the search with the reported choices; return the number of decisions it takes."""
    it = iter(lits)

    def choose(values):
        lit = next(it, None)
        if type(lit) is not int or lit == 0 or abs(lit) > n or values[abs(lit)] is not None:
            raise SubmissionError(
                f"the choices reported for instance {index} do not replay (got {lit!r})"
            )
        return lit

    status, decisions = solve(n, clauses, choose, MAX_DECISIONS)
    if decisions != len(lits):
        raise SubmissionError(f"the choices reported for instance {index} do not replay")
    return decisions


def grade(submission: Path, answers_dir: Path, split: str, sandbox: str = "local") -> float:
    instances = json.loads((answers_dir / f"{split}.json").read_text())["instances"]

    message = f"heuristic.py took longer than {TIME_LIMIT_S:.0f} s in total (import and all calls)"
    with worker_pool(TIME_LIMIT_S, message, sandbox=sandbox) as pool:
        worker = pool.start(WORKER, submission, label="heuristic.py")
        counts = []
        for k, inst in enumerate(instances):
            request = {
                "index": k + 1,
                "n": inst["n"],
                "clauses": inst["clauses"],
                "seed": 1000 + k,
                "max_decisions": MAX_DECISIONS,
            }
            lits = run(worker, request)
            counts.append(replay(inst["n"], inst["clauses"], lits, k + 1))
        return sum(counts) / len(counts)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    run_grader(grade)
