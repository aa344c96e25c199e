"""Aggregates, performance ratios and AUP against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from mlagent_tui.core.bench.aup import compute_aup, compute_aups, task_ratios
from mlagent_tui.core.bench.metrics import (
    RunOutcome,
    aggregate,
    best_so_far,
    crashed_outcome,
    mean_sem,
)
from mlagent_tui.core.bench.score_table import (
    ScoreTableError,
    TaskScores,
    parse_score_table,
    score_table_csv,
)

# Task A, higher is better, baseline 0.5: m1 0.8 is best; m2 0.4 is worse than the baseline
#   -> infeasible. r(m1) = 1, r(baseline) = 0.8/0.5 = 1.6, r(m2) = 1.05 * 1.6 = 1.68.
# Task B, lower is better, baseline 10: m2 4 is best. r(m2) = 1, r(m1) = 5/4 = 1.25,
#   r(baseline) = 10/4 = 2.5.
# Task C, higher is better, baseline 1: m1 and m2 tie at 2. r = 1 for both, r(baseline) = 2.
# Linear (exact) AUP: tau_max = 2.5; AUP = mean over tasks of (2.5 - r):
#   m1 (1.5 + 1.25 + 1.5)/3 = 4.25/3; m2 (0.82 + 1.5 + 1.5)/3 = 3.82/3;
#   baseline (0.9 + 0 + 0.5)/3 = 1.4/3.
TABLE = """task,higher_is_better,baseline,m1,m2
A,true,0.5,0.8,0.4
B,false,10,5,4
C,true,1.0,2.0,2.0
"""


def test_hand_computed_ratios_and_aup() -> None:
    result = compute_aup(parse_score_table(TABLE), definition="linear")
    assert result.ratios["A"] == pytest.approx({"baseline": 1.6, "m1": 1.0, "m2": 1.68})
    assert result.ratios["B"] == pytest.approx({"baseline": 2.5, "m1": 1.25, "m2": 1.0})
    assert result.ratios["C"] == pytest.approx({"baseline": 2.0, "m1": 1.0, "m2": 1.0})
    assert result.tau_max == pytest.approx(2.5)
    assert result.aup == pytest.approx({"baseline": 1.4 / 3, "m1": 4.25 / 3, "m2": 3.82 / 3})
    # rho_m(tau): share of tasks with ratio <= tau
    assert result.profile("m1", [1.0, 1.2, 1.25, 2.5]) == pytest.approx([2 / 3, 2 / 3, 1, 1])
    assert result.profile("m2", [1.0, 1.67, 1.68]) == pytest.approx([2 / 3, 2 / 3, 1])
    assert result.profile("baseline", [1.0, 1.6, 2.0, 2.5]) == pytest.approx([0, 1 / 3, 2 / 3, 1])


def test_aup_is_the_area_under_the_profile() -> None:
    """The closed form equals a fine numeric integral of the step function over [1, tau_max]."""
    result = compute_aup(parse_score_table(TABLE), definition="linear")
    n = 30_000
    width = (result.tau_max - 1) / n
    taus = [1 + (i + 0.5) * width for i in range(n)]
    for m in result.methods:
        assert sum(result.profile(m, taus)) * width == pytest.approx(result.aup[m], abs=1e-3)


def test_no_valid_solution_and_equal_to_baseline() -> None:
    row = TaskScores(task="t", higher_is_better=False, baseline=2.0, scores={"a": None, "b": 2.0})
    r = task_ratios(row)
    # nobody beats the baseline: it is the best (ratio 1); equal to it is feasible; None is not
    assert r == pytest.approx({"baseline": 1.0, "b": 1.0, "a": 1.05})
    neg = TaskScores(task="t", higher_is_better=True, baseline=1.0, scores={"a": -3.0})
    assert task_ratios(neg)["a"] == pytest.approx(1.05)


def test_negative_baseline_is_infeasible_as_in_mlgym() -> None:
    """Blotto's baseline is -0.248: infeasible, and the worst *feasible* ratio sets the rest."""
    rows = parse_score_table(
        "task,higher_is_better,baseline,a,b,c\nBlotto,true,-0.248,0.5,0.25,-1\n"
        "Zero,false,2,0,1,infeasible\nNone,true,-1,-2,infeasible,0\n"
    )
    result = compute_aup(rows, definition="linear")
    # Blotto: best 0.5; a 1, b 2 (the worst feasible); baseline and c 1.05 * 2
    assert result.ratios["Blotto"] == pytest.approx({"baseline": 2.1, "a": 1, "b": 2, "c": 2.1})
    # Zero (lower is better): a score of 0 has no ratio: infeasible; b 1 is the best
    assert result.ratios["Zero"] == pytest.approx({"baseline": 2, "a": 2.1, "b": 1, "c": 2.1})
    # None: nothing feasible: every method's ratio is inf, the task is never solved
    assert all(math.isinf(r) for r in result.ratios["None"].values())
    reasons = {(i.task, i.method): i.reason for i in result.infeasible}
    assert reasons[("Blotto", "baseline")] == reasons[("Blotto", "c")] == "negative"
    assert reasons[("Zero", "a")] == "zero" and reasons[("Zero", "c")] == "no score"
    assert len(reasons) == 2 + 2 + 4
    assert result.summary()["ratios"]["None"]["a"] is None  # JSON-safe
    # tau_max is the largest finite ratio; the unsolved task adds 0 for everyone
    assert result.tau_max == pytest.approx(2.1)
    assert result.aup["a"] == pytest.approx((1.1 + 0 + 0) / 3)


def test_mlgym_definition_by_hand() -> None:
    """log10 axis, 500-point grid, tau_max shared by every table of the comparison."""
    one = parse_score_table("task,higher_is_better,baseline,m\nA,true,1,2\n")
    wide = parse_score_table("task,higher_is_better,baseline,m\nB,true,1,20\n")
    alone = compute_aup(one)
    # worst feasible ratio 2 -> proposal ceil(2.1) = 3 -> log10 3 = 0.477 -> tau_max 0.5;
    # m: log10(1) = 0 -> area 0.5; baseline log10 2 = 0.30103 -> grid point 301 of 499
    assert alone.tau_max == pytest.approx(0.5) and alone.grid_points == 500
    assert alone.aup["m"] == pytest.approx(0.5)
    assert alone.aup["baseline"] == pytest.approx(0.5 - 301 * 0.5 / 499)
    both = compute_aups({"one": one, "wide": wide})
    # B proposes ceil(21) = 21 -> log10 21 = 1.32 -> 1.4 for both tables
    assert both["one"].tau_max == both["wide"].tau_max == pytest.approx(1.4)
    assert both["one"].aup["m"] == pytest.approx(1.4)
    given = compute_aups({"one": one}, tau_max=2.0)["one"]
    assert given.aup["m"] == pytest.approx(2.0)
    # the profile on the log axis: m solves A at tau 0, the baseline from log10 2
    assert alone.profile("baseline", [0.0, 0.3, 0.302]) == [0.0, 0.0, 1.0]


def test_score_table_round_trip_and_bad_tables() -> None:
    rows = parse_score_table(TABLE)
    again = parse_score_table(score_table_csv(rows))
    assert [r.model_dump() for r in again] == [r.model_dump() for r in rows]
    with pytest.raises(ScoreTableError, match="missing value"):
        parse_score_table("task,higher_is_better,baseline,m1\nA,true,0.5,\n")
    with pytest.raises(ScoreTableError, match="missing column.*baseline"):
        parse_score_table("task,higher_is_better,m1\nA,true,0.5\n")
    with pytest.raises(ScoreTableError, match="not a number"):
        parse_score_table("task,higher_is_better,baseline,m1\nA,true,0.5,abc\n")
    with pytest.raises(ScoreTableError, match="higher_is_better"):
        parse_score_table("task,higher_is_better,baseline,m1\nA,maybe,0.5,1\n")
    with pytest.raises(ScoreTableError, match="no method"):
        parse_score_table("task,higher_is_better,baseline\nA,true,0.5\n")
    infeasible = parse_score_table("task,higher_is_better,baseline,m\nA,true,1,infeasible\n")
    assert infeasible[0].scores == {"m": None}


def run(i: int, **kw) -> RunOutcome:
    return RunOutcome(task="t", model="m", run_index=i, status=kw.pop("status", "finished"), **kw)


def test_aggregate_hand_computed() -> None:
    runs = [
        # lower is better, baseline 1.0: improvement 20% (success), 5%, -10% ...
        run(
            0,
            final_score=0.8,
            valid=True,
            improvement_pct=20.0,
            success=True,
            medal="bronze",
            above_median=True,
            best_attempt=0.7,
            parse_errors=2,
            tokens_in=100,
            cost_usd=0.5,
        ),
        run(
            1,
            final_score=0.95,
            valid=True,
            improvement_pct=5.0,
            above_median=False,
            best_attempt=0.9,
            execution_errors=1,
            timeouts=1,
            tokens_out=50,
            cost_usd=0.1,
        ),
        run(2, status="budget", final_score=1.1, valid=True, improvement_pct=-10.0),
        run(3, status="failed", reason="model error: 401"),
        crashed_outcome("t", "m", 4, "TaskError: prepare failed"),
    ]
    row = aggregate(runs, higher_is_better=False)
    assert row.runs == 5
    assert row.success_rate == pytest.approx(0.2)
    assert row.valid_rate == pytest.approx(0.6)
    # improvements 20, 5, -10: mean 5, sd 15, sem 15/sqrt(3)
    assert row.mean_improvement_pct == pytest.approx(5.0)
    assert row.sem_improvement_pct == pytest.approx(15 / math.sqrt(3), abs=1e-4)
    assert row.above_median_rate == pytest.approx(0.2)
    assert (row.bronze_rate, row.silver_rate, row.gold_rate) == (0.2, 0.0, 0.0)
    assert row.any_medal_rate == pytest.approx(0.2)
    assert row.best_attempt == pytest.approx(0.7)  # lower is better
    assert row.best_submission == pytest.approx(0.8)
    assert row.failures == {
        "parse_errors": 2,
        "execution_errors": 1,
        "timeouts": 1,
        "no_submission": 1,  # the model-error run (the crash counts as crashed)
        "budget_exhausted": 1,
        "model_errors": 1,
        "crashed": 1,
    }
    assert row.mean_tokens == pytest.approx(30.0)
    assert row.mean_cost_usd == pytest.approx(0.12)
    with pytest.raises(ValueError):
        aggregate([run(0), RunOutcome(task="u", model="m", run_index=0, status="finished")], True)


def test_mean_sem_and_best_so_far() -> None:
    assert mean_sem([]) == (None, None)
    assert mean_sem([3.0]) == (3.0, None)
    assert mean_sem([1.0, 3.0]) == pytest.approx((2.0, 1.0))
    curve = [(2, 0.5), (2, 0.7), (4, 0.6)]
    got = best_so_far(curve, 5, higher_is_better=True)
    assert math.isnan(got[0]) and got[1:] == [0.7, 0.7, 0.7, 0.7]
    assert best_so_far(curve, 5, higher_is_better=False)[1:] == [0.5, 0.5, 0.5, 0.5]


def test_profile_figure_draws_the_profiles() -> None:
    import matplotlib.pyplot as plt

    from mlagent_tui.core.bench.plots import draw_profiles

    result = compute_aup(parse_score_table(TABLE), definition="linear")
    fig, ax = plt.subplots()
    draw_profiles(ax, result, "hand")
    lines = {line.get_label().split(" (")[0]: line for line in ax.get_lines()}
    assert set(lines) == {"baseline", "m1", "m2"}
    for method, line in lines.items():
        xs, ys = list(line.get_xdata()), list(line.get_ydata())
        assert xs[0] == pytest.approx(1.0) and xs[-1] == pytest.approx(2.5)
        assert ys == pytest.approx(result.profile(method, xs))
        assert f"AUP {result.aup[method]:.3f}" in line.get_label()
    # m2 steps to 1 exactly at its infeasible ratio 1.68
    for x, y in zip(lines["m2"].get_xdata(), lines["m2"].get_ydata(), strict=True):
        assert y == pytest.approx(1.0 if x >= 1.68 - 1e-9 else 2 / 3)
    plt.close(fig)
