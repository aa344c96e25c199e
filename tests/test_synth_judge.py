"""The Technical Writer's checks. The direction survives a line wrap; the leak check
adds a judge by the model (strictly parsed) on top of the number floor."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.llm import Completion, ModelError, make_model
from mlagent_tui.core.synth.answers import parse_answer
from mlagent_tui.core.synth.checks import description_problems, leak_problem
from mlagent_tui.core.synth.judge import judge_leak
from mlagent_tui.core.synth.report import RoleLog
from mlagent_tui.core.synth.roles import StrategistAnswer, WriterAnswer
from mlagent_tui.core.synth.seed import SeedFacts

from . import synth_helpers as h
from .agent_helpers import write_replay

SPEC = parse_answer(h.strategist(), StrategistAnswer).spec
FACTS = SeedFacts(
    name="seed", title="Seed", modality="tabular", task_type="binary-classification",
    metric="accuracy", higher_is_better=True, id_column="id", target_columns=["target"],
    files=[], target_summary="", column_names=[], description="",
)  # fmt: skip


def problems(text: str, facts: SeedFacts = FACTS) -> list[str]:
    return description_problems(WriterAnswer(description_md=text), SPEC, facts)


def test_direction_survives_line_wraps_and_emphasis() -> None:
    assert problems(h.DESCRIPTION) == []
    wrapped = h.DESCRIPTION.replace("**Higher is better.**", "**Higher\nis better.**")
    assert problems(wrapped) == []
    assert problems(h.DESCRIPTION.replace("**Higher is better.**", "Higher  is\n  better.")) == []
    assert problems(h.DESCRIPTION.replace("**Higher is better.**", "*Higher* is *better*.")) == []
    gone = h.DESCRIPTION.replace("**Higher is better.**", "")
    assert problems(gone) == ["the description must say 'higher is better'"]
    lower = FACTS.model_copy(update={"higher_is_better": False})
    assert problems(gone + "\nLower is\nbetter.", lower) == []


def test_metric_name_survives_a_line_wrap() -> None:
    mae = FACTS.model_copy(update={"metric": "mean_absolute_error"})
    text = h.DESCRIPTION.replace("Accuracy:", "Mean absolute\nerror:")
    assert problems(text, mae) == []


def judged(answers: list[str], text: str, tmp_path: Path) -> tuple[str | None, RoleLog]:
    model = make_model(f"replay:{write_replay(tmp_path / 'judge.jsonl', answers)}")
    log = RoleLog()
    return judge_leak(model, text, SPEC, log=log), log


def test_judge_finds_a_reworded_rule_the_numbers_miss(tmp_path: Path) -> None:
    assert leak_problem(h.REWORDED_DESCRIPTION, SPEC, None) is None  # the floor misses it
    verdict, log = judged([h.judge(True, h.REWORDED_QUOTE)], h.REWORDED_DESCRIPTION, tmp_path)
    assert verdict is not None and "judged by the model" in verdict
    assert h.REWORDED_QUOTE in verdict and log.calls == 1 and log.json_errors == []


def test_judge_clears_a_clean_description(tmp_path: Path) -> None:
    verdict, log = judged([h.judge(False)], h.DESCRIPTION, tmp_path)
    assert verdict is None and log.calls == 1


def test_judge_is_parsed_strictly(tmp_path: Path) -> None:
    """Prose, a string for a bool, unknown fields and a quote that is not in the text are each
    sent back; three bad verdicts count as a leak (no verdict is no clearance)."""
    answers = [
        "Yes, it leaks the rule.",
        '{"leaks": "no", "quote": ""}',
        '{"leaks": false, "quote": "", "confidence": 0.9}',
    ]
    verdict, log = judged(answers, h.DESCRIPTION, tmp_path)
    assert verdict is not None and "no valid verdict" in verdict
    assert log.calls == 3 and len(log.json_errors) == 3
    assert "no JSON object" in log.json_errors[0]
    assert "leaks" in log.json_errors[1] and "confidence" in log.json_errors[2]
    answers = [h.judge(True, "the rule is y = 2x"), h.judge(True, h.REWORDED_QUOTE.upper())]
    verdict, log = judged(answers, h.REWORDED_DESCRIPTION, tmp_path)
    assert "is not in the description" in log.json_errors[0]
    assert verdict is not None and "judged by the model" in verdict  # the quote, any case
    verdict, log = judged([h.judge(True, "")], h.REWORDED_DESCRIPTION, tmp_path)
    assert verdict is not None and log.calls == 1  # quote asked for, but a leak stays a leak


class FailingModel:
    name, supports_grammar = "down", False

    def complete(self, messages, **kwargs) -> Completion:  # noqa: ANN001, ANN003
        raise ModelError("connection refused")


def test_judge_model_error_is_not_a_clearance() -> None:
    """It propagates (the run stops and says why) instead of passing as 'no leak'."""
    with pytest.raises(ModelError, match="connection refused"):
        judge_leak(FailingModel(), h.DESCRIPTION, SPEC, log=RoleLog())  # type: ignore[arg-type]


def test_number_floor_ignores_the_sizes_the_description_must_give() -> None:
    """A coefficient equal to a row count is a coincidence the floor no longer flags."""
    spec = SPEC.model_copy(update={"hidden_rule": "y = 1[96*soil_moisture + 64*air_temp > 0]"})
    text = h.DESCRIPTION  # says 96 seedlings in train.csv and 64 in test.csv
    assert leak_problem(text, spec, None, sizes=[96, 64, 160]) is None
    assert "coefficients" in leak_problem(text, spec, None)  # without the sizes, a false alarm
