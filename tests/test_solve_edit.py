"""The solve agent improves by one edit of its best valid script: the model picks a setting from
a menu and its new value, a failed or worse edit costs one step, and the next edit starts from
the best."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.agent import StepRecord
from mlagent_tui.core.agent.menu import MENU_FORMAT, apply_choice, menu_grammar, menu_of
from mlagent_tui.core.agent.parsing import ResponseParseError
from mlagent_tui.core.agent.solve_edit import best_run, plan_edit, runs_of
from mlagent_tui.core.agent.tweak import VALUE_FORMAT, apply_value, tweaks_of
from mlagent_tui.core.session import Session, SessionConfig
from trainer.data import load_samples

from .agent_helpers import Recording, write_replay
from .search_helpers import GOOD, reply

# the tiny task's answer at seed 0 is y = 2x: SHIFT is the one setting, 0 is exact
STARTER = """import csv

SHIFT = 1
test = list(csv.DictReader(open("test.csv")))
with open("submission.csv", "w") as fh:
    fh.write("id,y\\n")
    for row in test:
        y = int(row["x"]) + int(row["x"]) + SHIFT
        fh.write(f"{row['id']},{y}\\n")
print("wrote submission.csv")
"""


def value(v: str, plan: str = "try it", setting: int = 1) -> str:
    return f"Setting: {setting}\nPlan: {plan}\nValue: {v}\n"


def run_step(step: int, script: str, score: float | None) -> StepRecord:
    shown = f"done\n\nValidation: mae = {score:.6g} (lower is better)" if score is not None else ""
    return StepRecord(
        step=step,
        action="Run Solution",
        action_input={"content": script},
        observation=shown or "Traceback: boom",
        ok=score is not None,
    )


@pytest.fixture
def shift_task(tiny_task: Path) -> Path:
    (tiny_task / "env" / "train.py").write_text(STARTER)
    return tiny_task


def solve(tmp_path: Path, home, store, task: Path, replies: list[str], **cfg) -> Session:  # noqa: ANN001, ANN003
    replay = write_replay(tmp_path / "replay.jsonl", replies)
    config = SessionConfig(task_dir=str(task), model=f"replay:{replay}", agent="solve", **cfg)
    return Session.create(home, store, config)


def test_runs_are_read_and_the_best_is_by_the_metrics_direction() -> None:
    history = [run_step(1, "a", 3.0), run_step(2, "b", None), run_step(3, "c", 1.0)]
    runs = runs_of(history)
    assert [(r.step, r.score) for r in runs] == [(1, 3.0), (2, None), (3, 1.0)]
    assert best_run(runs, higher_is_better=False).step == 3  # type: ignore[union-attr]
    assert best_run(runs, higher_is_better=True).step == 1  # type: ignore[union-attr]
    assert best_run(runs_of([run_step(1, "a", None)]), True) is None
    assert best_run(runs_of([run_step(1, "a", float("nan"))]), True) is None


def test_an_edit_starts_from_the_best_run_and_needs_one() -> None:
    worse = STARTER.replace("SHIFT = 1", "SHIFT = 2")
    history = [run_step(1, STARTER, 1.0), run_step(2, worse, 2.0)]
    edit = plan_edit(history, ["x"], higher_is_better=False)
    assert edit is not None and edit.base.step == 1 and [t.text for t in edit.menu] == ["1"]
    assert edit.menu[0].tried == ["2"]  # the worse run's value is not offered again
    assert plan_edit([run_step(1, STARTER, None)], ["x"], False) is None  # nothing valid
    plain = "print('no settings')\n"
    assert plan_edit([run_step(1, plain, 1.0)], [], False) is None  # nothing to change


CHOICES = """from sklearn.linear_model import LogisticRegression
FEATURES = ["a"]
model = LogisticRegression(C=1.0, max_iter=100)
"""


def test_the_model_chooses_the_setting_by_its_number() -> None:
    menu = menu_of(CHOICES, ["a", "b"])
    assert [t.kind for t in menu] == ["names", "model", "num", "num"]  # the script's order
    plan, script, focus = apply_choice(value("10", "more C", 3), CHOICES, menu, ["a", "b"])
    assert plan == "more C" and "C=10, max_iter=100" in script and focus is menu[2]
    _, script, _ = apply_choice(value('["a", "b"]'), CHOICES, menu, ["a", "b"])
    assert 'FEATURES = ["a", "b"]' in script
    with pytest.raises(ResponseParseError, match="Setting 5 is not in the list"):
        apply_choice(value("10.0", setting=5), CHOICES, menu, ["a", "b"])
    # a model with no grammar that leaves the number out: the setting the value can belong to
    _, script, focus = apply_choice("Plan: x\nValue: 1000", CHOICES, menu, ["a", "b"])
    assert focus is menu[3] and "max_iter=1000" in script
    _, script, focus = apply_choice('Plan: x\nValue: ["a", "b"]', CHOICES, menu, ["a", "b"])
    assert focus is menu[0] and 'FEATURES = ["a", "b"]' in script  # a longer column list
    with pytest.raises(ResponseParseError, match="no 'Setting: N' line"):
        apply_choice("Plan: x\nValue: 7.5", CHOICES, menu, ["a", "b"])
    grammar = menu_grammar(menu, ["a", "b"])
    assert grammar.startswith('root ::= "Setting: " ("1" v1 | "2" v2 | "3" v3 | "4" v4)')
    assert 'v3-value ::= "0.1" | "0.5" | "2" | "10"\n' in grammar


def test_a_long_menu_keeps_every_model_swap() -> None:
    numbers = "\n".join(f"A{i} = f(k={i + 2})" for i in range(12))
    model = "from sklearn.linear_model import LogisticRegression\nm = LogisticRegression()\n"
    script = numbers + "\n" + model
    menu = menu_of(script, [])
    assert len(menu) == 8 and menu[-1].kind == "model" and menu[0].text == "2"


def test_a_value_the_script_cannot_take_is_an_error_the_model_sees() -> None:
    text = Path("tasks/text-sentiment/env/train.py").read_text()
    model = next(t for t in tweaks_of(text, []) if t.kind == "model")
    with pytest.raises(ResponseParseError, match="not a model that can replace"):
        apply_value("Plan: x\nValue: Ridge", text, model)  # no grammar held the model back
    with pytest.raises(ResponseParseError, match="the one the script has"):
        apply_value(f"Value: {model.text}", text, model)


def test_a_failed_or_worse_edit_costs_one_step_and_the_next_starts_from_the_best(
    tmp_path, home, store, shift_task
) -> None:
    replies = [value("undefined_name"), value("3"), value("0", "no shift")]
    s = solve(tmp_path, home, store, shift_task, replies, max_steps=4, solve_starter=True)
    s.model = s.agent.model = recording = Recording(s.model)
    result = s.run()
    steps = store.rows("steps", s.id)
    assert [r["ok"] for r in steps] == [1, 0, 1, 1]  # NameError, then worse, then exact
    assert result.valid and result.final_score == pytest.approx(0.0)
    assert len(recording.prompts) == 3 and all(MENU_FORMAT in p for p in recording.prompts)
    for prompt in recording.prompts:  # each edit shows the starter, the best so far
        assert "SHIFT = 1" in prompt and "SHIFT = 3" not in prompt and "Traceback" not in prompt
    thoughts = [e.payload.thought for e in store.events(s.id, kinds=["agent_response"])]
    assert thoughts[1].startswith("improve: change 1 in step 1's script (mae = 1")
    # the trainer rebuilds each prompt exactly and knows the parent it improved
    samples = load_samples(store)
    assert ["\n".join(m["content"] for m in x.messages) for x in samples] == recording.prompts
    assert [x.response for x in samples] == replies
    assert len({x.parent_score for x in samples}) == 1  # the starter's score, every time


def test_an_answer_that_is_no_value_is_asked_again_with_the_format(
    tmp_path, home, store, shift_task
) -> None:
    replies = ["I will improve it.", value("0")]
    s = solve(tmp_path, home, store, shift_task, replies, max_steps=2, solve_starter=True)
    s.model = s.agent.model = recording = Recording(s.model)
    assert s.run().final_score == pytest.approx(0.0)
    assert "no 'Setting: N' line found" in recording.prompts[1]
    samples = load_samples(store)
    assert ["\n".join(m["content"] for m in x.messages) for x in samples] == recording.prompts


def test_edits_follow_the_starter_unless_turned_off(tmp_path, home, store, shift_task) -> None:
    stored = {"task_dir": str(shift_task), "model": "replay:x", "agent": "solve"}
    assert SessionConfig.model_validate(stored).solve_edits is False  # older sessions
    assert SessionConfig.model_validate({**stored, "solve_starter": True}).solve_edits is True
    off = {**stored, "solve_starter": True, "solve_edits": False}
    assert SessionConfig.model_validate(off).solve_edits is False
    s = solve(
        tmp_path, home, store, shift_task, [reply(GOOD)], max_steps=2, solve_starter=True,
        solve_edits=False,
    )  # fmt: skip
    s.model = s.agent.model = recording = Recording(s.model)
    assert s.run().final_score == pytest.approx(0.0)
    assert MENU_FORMAT not in recording.prompts[0] and "SHIFT = 1" in recording.prompts[0]


def test_a_session_stored_before_the_menu_runs_and_trains_as_it_did(
    tmp_path, home, store, shift_task
) -> None:
    """A config stored before the menu (every field but solve_menu) draws the setting for the
    model as it did, and the trainer rebuilds that prompt, not a menu."""
    stored = SessionConfig(task_dir=str(shift_task), agent="solve", solve_starter=True)
    old = {k: v for k, v in stored.model_dump().items() if k != "solve_menu"}
    assert SessionConfig.model_validate(old).solve_menu is False
    assert SessionConfig.model_validate(stored.model_dump()).solve_menu is True
    assert SessionConfig(task_dir="t", agent="solve").solve_menu is True  # a new session
    replies = ["I will improve it.", "Plan: exact\nValue: 0\n"]
    s = solve(
        tmp_path, home, store, shift_task, replies, max_steps=2, solve_starter=True,
        solve_menu=False,
    )  # fmt: skip
    s.model = s.agent.model = recording = Recording(s.model)
    assert s.run().final_score == pytest.approx(0.0)
    assert all(p.endswith(VALUE_FORMAT) and MENU_FORMAT not in p for p in recording.prompts)
    assert "no 'Value: ...' line found" in recording.prompts[1]  # the re-ask, as before
    samples = load_samples(store)
    assert ["\n".join(m["content"] for m in x.messages) for x in samples] == recording.prompts
