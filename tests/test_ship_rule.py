"""`make adapter --ship`: a run ships only where its gain over the shipped model holds on the
confirmation seeds (paired, sign test) with validity not lower, and those seeds are used for
no choice."""

from __future__ import annotations

import sys

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import curve_ship  # noqa: E402
import learning_curve  # noqa: E402


def confirm(diff: float | None, p: float, mine: float, theirs: float, n: int = 48) -> dict:
    paired = {"sessions": n, "better": 20, "worse": 8, "same": 20}
    paired |= {"mean_difference": diff, "p_value": p}
    return {
        "valid_rate": mine,
        "against": {"model": "local", "valid_rate": theirs, "paired": paired},
    }


def test_a_gain_that_holds_ships() -> None:
    assert curve_ship.gain_shortfalls(confirm(0.05, 0.01, 0.9, 0.9), 0.05) == []


def test_no_gain_a_weak_one_or_lower_validity_is_refused() -> None:
    worse = curve_ship.gain_shortfalls(confirm(-0.02, 0.01, 0.9, 0.8), 0.05)
    assert len(worse) == 1 and "no gain over local" in worse[0]
    chance = curve_ship.gain_shortfalls(confirm(0.03, 0.2, 0.9, 0.8), 0.05)
    assert "p = 0.2" in chance[0]
    less_valid = curve_ship.gain_shortfalls(confirm(0.05, 0.01, 0.7, 0.8), 0.05)
    assert less_valid == ["valid rate 0.7 below the shipped model's 0.8"]
    nothing = curve_ship.gain_shortfalls({}, 0.05)
    assert len(nothing) == 2  # an evaluation that did not run never ships


def test_confirmation_seeds_are_no_choice_or_training_seeds() -> None:
    confirm_seeds = set(learning_curve.CONFIRM_SEEDS.split(","))
    chosen_on = set(learning_curve.EVAL_SEEDS.split(","))  # sft or RL is chosen on these
    assert not confirm_seeds & chosen_on
    from trainer.heldout import EVAL_SEEDS

    assert {int(s) for s in confirm_seeds} <= set(EVAL_SEEDS)  # held out of every training phase
    assert len(confirm_seeds) * 3 * 4 >= 48  # 3 training tasks, 4 samples: 48 paired sessions
