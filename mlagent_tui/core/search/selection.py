"""Hidden consistent selection: the validation answers split into a part the search scores
nodes on and a part it never sees, derived inside the harness from the session seed.

Row-wise CSV tasks (a submission with an id column and a validate.csv of answers holding it)
split by a hash of (seed, id): each part is a copy of the private folder whose validate.csv
keeps only that part's rows, and the task's own grader scores a submission against it (extra
ids in a submission are ignored by the grading kit). Other tasks (code, games) have no hidden
split: nodes are scored and selected on validation. Task folders need nothing new.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from ..search_events import SelectionCandidate, SelectionMade
from ..tasks import Task
from .node import Node, Tree

HIDDEN_FRACTION = 0.4
MIN_ROWS = 20  # fewer validation rows than this: a split would leave parts too noisy
TOP_K = 3
NO_SPLIT = "no hidden split (the task's validation rows cannot be split): selected by validation"


class Grader(Protocol):
    def grade(self, node: int, private: Path, split: str) -> float | None: ...


class Split(BaseModel):
    hidden: bool
    search_private: Path  # the answers folder the search grades nodes against
    hidden_private: Path | None = None
    note: str = ""
    rows: tuple[int, int] = (0, 0)  # (search rows, hidden rows)


def in_hidden(seed: int, ident: str, fraction: float = HIDDEN_FRACTION) -> bool:
    digest = hashlib.sha256(f"{seed}:{ident}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < fraction


def _read_rows(path: Path, id_column: str) -> tuple[list[str], list[list[str]], int] | None:
    try:
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            rows = list(reader)
    except (OSError, StopIteration, csv.Error, UnicodeDecodeError):
        return None
    if id_column not in header:
        return None
    return header, rows, header.index(id_column)


def _part(private: Path, dest: Path, header: list[str], rows: list[list[str]]) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(private, dest, symlinks=True)
    target = dest / "validate.csv"
    target.unlink()
    with target.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def make_split(task: Task, private: Path, seed: int) -> Split:
    """The search's and the hidden part's answers folders, beside `private` (rebuilt the same
    from the seed each time, so a resumed search grades as before)."""
    id_column = task.spec.submission.id_column
    answers = private / "validate.csv"
    read = _read_rows(answers, id_column) if id_column and answers.is_file() else None
    if read is None or task.spec.validate_.mode != "score":
        return Split(hidden=False, search_private=private, note=NO_SPLIT)
    header, rows, col = read
    hidden = [r for r in rows if len(r) > col and in_hidden(seed, r[col])]
    seen = [r for r in rows if len(r) > col and not in_hidden(seed, r[col])]
    if len(hidden) < MIN_ROWS // 2 or len(seen) < MIN_ROWS // 2:
        return Split(hidden=False, search_private=private, note=NO_SPLIT)
    search_dir = private.parent / f"{private.name}.search-part"
    hidden_dir = private.parent / f"{private.name}.hidden-part"
    _part(private, search_dir, header, seen)
    _part(private, hidden_dir, header, hidden)
    return Split(
        hidden=True,
        search_private=search_dir,
        hidden_private=hidden_dir,
        note=f"validation split by id: {len(seen)} rows seen by the search, {len(hidden)} hidden",
        rows=(len(seen), len(hidden)),
    )


def remove_split(split: Split) -> None:
    for folder in (split.hidden_private, split.search_private if split.hidden else None):
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def contenders(ranked: list[Node], k: int) -> list[Node]:
    """The first `k` nodes of distinct search scores (a tie is most often the same predictions:
    three copies would leave the hidden part no choice), and the task's starter where it ran:
    an answer that does worse than the starter on the hidden part is never handed back."""
    top: list[Node] = []
    for node in ranked:
        if len(top) < k and all(node.score != t.score for t in top):
            top.append(node)
    starter = next((n for n in ranked if n.form == "starter"), None)
    if starter is not None and starter not in top:
        top.append(starter)
    return top


def select(
    tree: Tree, runner: Grader, split: Split, private: Path, k: int = TOP_K
) -> SelectionMade:
    """Re-score the top `k` nodes by search score on the hidden part; the best there is the
    answer (validation's own pick where there is no hidden split). Both picks are graded on
    test, for the report only: the selection gap."""
    ranked = tree.ranked()
    if not ranked:
        return SelectionMade(node=None, by="none", hidden_split=split.hidden, note="no valid node")
    by_validation = ranked[0]
    top = contenders(ranked, k)
    if split.hidden and split.hidden_private is not None:
        cands = [
            SelectionCandidate(
                node=n.id,
                search_score=n.score,
                hidden_score=runner.grade(n.id, split.hidden_private, "validate"),
            )
            for n in top
        ]
        scored = [c for c in cands if c.hidden_score is not None]
        sign = 1 if tree.higher else -1
        pick = max(scored, key=lambda c: sign * c.hidden_score) if scored else cands[0]  # type: ignore[operator]
        by = "hidden"
    else:
        cands = [SelectionCandidate(node=n.id, search_score=n.score) for n in top]
        pick, by = cands[0], "validation"
    test = runner.grade(pick.node, private, "test")
    if by_validation.id == pick.node:
        val_test = test
    else:
        val_test = runner.grade(by_validation.id, private, "test")
    return SelectionMade(
        node=pick.node,
        by=by,  # type: ignore[arg-type]
        hidden_split=split.hidden,
        candidates=cands,
        search_score=pick.search_score,
        hidden_score=pick.hidden_score,
        test_score=test,
        validation_node=by_validation.id,
        validation_test_score=val_test,
        note=split.note,
    )
