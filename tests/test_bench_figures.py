"""The bench's judgement of a score against a rounded baseline, and what its figures show when
there is little to show: one model, no cost, no validated score."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt

from mlagent_tui.core.bench.aup import compute_aup, infeasibility
from mlagent_tui.core.bench.plots import draw_profiles, plot_aup_vs_cost, plot_score_over_steps
from mlagent_tui.core.bench.score_table import parse_score_table


def test_the_starter_s_own_score_is_not_worse_than_its_rounded_baseline() -> None:
    assert infeasibility(0.8782608695652174, 0.8783, higher_is_better=True) is None
    assert infeasibility(0.8782, 0.8783, higher_is_better=True) == "worse than the baseline"
    assert infeasibility(0.24849, 0.2485, higher_is_better=False) is None
    assert infeasibility(0.2486, 0.2485, higher_is_better=False) == "worse than the baseline"


def test_one_model_s_profile_ends_near_its_data() -> None:
    rows = parse_score_table("task,higher_is_better,baseline,m1\na,true,0.5,0.9\nb,true,0.5,0.4\n")
    result = compute_aup(rows)
    fig, ax = plt.subplots()
    draw_profiles(ax, result, "one model")
    steps = [x for line in ax.get_lines() for x in line.get_xdata() if x < result.tau_max]
    left, right = ax.get_xlim()
    assert right < result.tau_max and right <= max(steps) * 1.5 + 0.05
    assert any("flat to tau" in t.get_text() for t in ax.texts)
    plt.close(fig)


def _texts(path: Path, draw) -> list[str]:  # noqa: ANN001
    """The texts a figure function placed (captured before it closes its figure)."""
    seen: list[str] = []
    original = plt.close

    def close(fig=None):  # noqa: ANN001, ANN202
        if fig is not None:
            seen.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        original(fig)

    plt.close = close
    try:
        draw(path)
    finally:
        plt.close = original
    assert path.stat().st_size > 0
    return seen


def test_no_cost_and_no_score_say_so(tmp_path: Path) -> None:
    aup = {"best_attempt": {"local": 0.4, "baseline": 0.5}}
    texts = _texts(
        tmp_path / "cost.png",
        lambda p: plot_aup_vs_cost(aup, {"local": 0.0}, {"local": 1200.0}, p),
    )
    assert "no cost recorded" in texts
    info = {"metric": "accuracy", "higher_is_better": True, "baseline": 0.5, "thresholds": {}}
    texts = _texts(
        tmp_path / "steps.png",
        lambda p: plot_score_over_steps({"t": {"local": [math.nan, math.nan]}}, {"t": info}, p),
    )
    assert "no run has a validated score yet" in texts
