"""Prepare the sat-heuristic task: random 3-SAT instances near the satisfiability threshold.

python prepare.py --public DIR --private DIR --seed N

Public: instances.json (a small example set that evaluate.py solves).
Private: validate.json and test.json (larger sets drawn with other seeds).
Every set has as many satisfiable as unsatisfiable instances for each number of variables.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

RATIO = 4.26  # clauses per variable: the random 3-SAT phase transition
SPLITS = {  # name: (seed offset, sizes, instances per size and answer)
    "instances": (0, (30, 40, 50), 2),
    "validate": (1, (30, 40, 50), 5),
    "test": (2, (30, 40, 50), 5),
}


def random_3sat(n: int, rng: random.Random) -> list[list[int]]:
    clauses = []
    for _ in range(round(RATIO * n)):
        clauses.append([v if rng.random() < 0.5 else -v for v in rng.sample(range(1, n + 1), 3)])
    return clauses


def satisfiable(n: int, clauses: list[list[int]]) -> bool:
    """A small DPLL (Jeroslow-Wang branching) to label the instances."""
    occ: dict[int, list[int]] = {lit: [] for v in range(1, n + 1) for lit in (v, -v)}
    for i, c in enumerate(clauses):
        for lit in c:
            occ[lit].append(i)

    def dpll(assign: dict[int, bool], units: list[int]) -> bool:
        assign = dict(assign)
        queue = list(units)
        while queue:
            lit = queue.pop()
            v, val = abs(lit), lit > 0
            if v in assign:
                if assign[v] != val:
                    return False
                continue
            assign[v] = val
            for ci in occ[-lit]:
                free = None
                nfree = 0
                for x in clauses[ci]:
                    if abs(x) in assign:
                        if assign[abs(x)] == (x > 0):
                            break
                    else:
                        nfree += 1
                        free = x
                else:
                    if nfree == 0:
                        return False
                    if nfree == 1:
                        queue.append(free)
        score: dict[int, float] = {}
        for c in clauses:
            free_lits = []
            for x in c:
                if abs(x) in assign:
                    if assign[abs(x)] == (x > 0):
                        break
                else:
                    free_lits.append(x)
            else:
                for x in free_lits:
                    score[x] = score.get(x, 0.0) + 2.0 ** -len(free_lits)
        if not score:
            return True
        lit = max(score, key=lambda x: (score[x] + score.get(-x, 0.0), x))
        return dpll(assign, [lit]) or dpll(assign, [-lit])

    return dpll({}, [])


def make_set(rng: random.Random, sizes: tuple[int, ...], per_answer: int) -> list[dict]:
    instances = []
    for n in sizes:
        wanted = {True: per_answer, False: per_answer}
        while wanted[True] or wanted[False]:
            clauses = random_3sat(n, rng)
            sat = satisfiable(n, clauses)
            if wanted[sat]:
                wanted[sat] -= 1
                instances.append({"n": n, "satisfiable": sat, "clauses": clauses})
    return instances


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", required=True, type=Path)
    parser.add_argument("--private", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.public.mkdir(parents=True, exist_ok=True)
    args.private.mkdir(parents=True, exist_ok=True)

    for name, (offset, sizes, per_answer) in SPLITS.items():
        rng = random.Random(args.seed * 1000 + offset)
        data = {"instances": make_set(rng, sizes, per_answer)}
        folder = args.public if name == "instances" else args.private
        with open(folder / f"{name}.json", "w") as f:
            f.write('{"instances": [\n')
            f.write(",\n".join(json.dumps(inst, sort_keys=True) for inst in data["instances"]))
            f.write("\n]}\n")


if __name__ == "__main__":
    main()
