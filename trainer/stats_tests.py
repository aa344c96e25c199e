"""Honest figures for small samples, in pure python: a rate's 95% interval (Wilson) and the
paired comparison of two models over the same sessions (an exact two-sided sign test).

Evaluations here run 6 to 48 sessions: "75% valid" from 12 sessions is anything from 47% to
91%, and RL's "5 better, 1 worse" has p = 0.22. The report prints both, so a difference the
sample cannot show is not read as one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, Field

Z95 = 1.959963984540054  # the normal quantile of 0.975


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a rate (95% by default); (0, 1) with no trials."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes of {n} trials")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    return low, 1.0 if successes == n else min(1.0, centre + half)


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign-test p-value of `better` against `worse` (ties left out): the
    chance, were both models equally good, of a split at least this uneven."""
    if better < 0 or worse < 0:
        raise ValueError("counts must be 0 or more")
    n = better + worse
    if n == 0:
        return 1.0
    k = min(better, worse)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


class Paired(BaseModel):
    """Model A against model B over the sessions both ran (same task, seed and sample)."""

    sessions: int
    better: int = Field(description="sessions where this model's reward was higher")
    worse: int
    same: int
    mean_difference: float | None
    p_value: float = Field(description="exact two-sided sign test over better vs worse")
    unmatched: int = 0  # sessions of either run with no partner in the other


def paired(
    mine: Iterable[tuple[tuple[object, ...], float]],
    theirs: Iterable[tuple[tuple[object, ...], float]],
) -> Paired:
    """Compare rewards keyed by (task, seed, sample)."""
    a, b = dict(mine), dict(theirs)
    keys = [k for k in a if k in b]
    diffs = [a[k] - b[k] for k in keys]
    better, worse = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    return Paired(
        sessions=len(keys),
        better=better,
        worse=worse,
        same=len(keys) - better - worse,
        mean_difference=round(sum(diffs) / len(diffs), 4) if diffs else None,
        p_value=round(sign_test(better, worse), 6),
        unmatched=len(a) + len(b) - 2 * len(keys),
    )


def interval_text(successes: int, n: int) -> str:
    """'75% [47-91%]': a rate with its 95% interval."""
    if n == 0:
        return "- (no sessions)"
    lo, hi = wilson(successes, n)
    return f"{successes / n:.0%} [{lo * 100:.0f}-{hi * 100:.0f}%]"
