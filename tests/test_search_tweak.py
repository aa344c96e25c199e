"""The tweak edit: the search picks a setting of the parent, the model picks its new value
under a grammar, the harness writes the line; strings, comments and the answer are left alone."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mlagent_tui.core.agent.estimators import CLASSIFIERS, REGRESSORS, TAKE_GAPS
from mlagent_tui.core.agent.parsing import ResponseParseError
from mlagent_tui.core.agent.tweak import (
    Columns,
    Tweak,
    apply_tweak,
    columns_of,
    options,
    pick_tweak,
    tweak_grammar,
    tweaks_of,
)
from mlagent_tui.core.search.operators import apply_value

SCRIPT = '''"""A starter: 1 feature of 29, max_iter=1000 in a docstring."""
import pandas as pd

FEATURES = ["mean_radius"]  # 3 more would help
model = LogisticRegression(max_iter=1000, C=0.5)
print("epochs 5")
x = [1, 2]
x = [1, 2]
'''
VOCAB = ["mean_radius", "mean_texture", "mean_area"]


def test_only_settings_in_code_are_offered() -> None:
    found = [(t.kind, t.text) for t in tweaks_of(SCRIPT, VOCAB)]
    assert found == [
        ("names", '["mean_radius"]'),
        ("model", "LogisticRegression"),
        ("num", "1000"),
        ("num", "0.5"),
    ]
    assert tweaks_of("def broken(:\n", VOCAB) == []  # a script that does not tokenize
    assert [t.kind for t in tweaks_of(SCRIPT, [])] == ["model", "num", "num"]  # no data header


def test_a_number_gets_other_values_and_a_list_more_columns() -> None:
    num = next(t for t in tweaks_of(SCRIPT, VOCAB) if t.text == "1000")
    assert options(num, VOCAB) == ["100", "500", "2000", "10000"]
    half = next(t for t in tweaks_of(SCRIPT, VOCAB) if t.text == "0.5")
    assert "0.5" not in options(half, VOCAB) and "0.05" in options(half, VOCAB)
    names = tweaks_of(SCRIPT, VOCAB)[0]
    assert options(names, VOCAB) == ["mean_texture", "mean_area"]
    grammar = tweak_grammar(names, VOCAB)
    assert '"[\\"mean_radius\\"" (", " value-name){1,10} "]"' in grammar
    assert 'name ::= "\\"mean_texture\\"" | "\\"mean_area\\""' in grammar


def test_the_value_is_written_into_its_line_only() -> None:
    num = next(t for t in tweaks_of(SCRIPT, VOCAB) if t.text == "1000")
    plan, new = apply_value("Plan: more iterations\nValue: 2000", SCRIPT, num)
    assert plan == "more iterations"
    assert "LogisticRegression(max_iter=2000, C=0.5)" in new
    assert "max_iter=1000 in a docstring" in new  # the docstring's text is not the setting
    with pytest.raises(ResponseParseError, match="is the one the script has"):
        apply_value("Plan: same\nValue: 1000", SCRIPT, num)
    with pytest.raises(ResponseParseError, match="no 'Value"):
        apply_value("Plan: nothing", SCRIPT, num)
    names = tweaks_of(SCRIPT, VOCAB)[0]
    grown = apply_tweak(SCRIPT, names, '["mean_radius", "mean_area"]')
    assert 'FEATURES = ["mean_radius", "mean_area"]  # 3 more would help' in grown


def test_a_column_the_model_names_twice_is_added_once() -> None:
    """The list's grammar cannot forbid a repeat; a column listed twice fails every fit
    (pandas gives the frame two columns of one name), so the edit keeps its first mention."""
    names = tweaks_of(SCRIPT, VOCAB)[0]
    reply = 'Plan: add the area\nValue: ["mean_radius", "mean_area", "mean_area", "mean_area"]'
    plan, new = apply_value(reply, SCRIPT, names)
    assert plan == "add the area"
    assert 'FEATURES = ["mean_radius", "mean_area"]  # 3 more would help' in new
    again = 'Plan: x\nValue: ["mean_radius", "mean_texture", "mean_area", "mean_texture"]'
    assert (
        'FEATURES = ["mean_radius", "mean_texture", "mean_area"]'
        in apply_value(again, SCRIPT, names)[1]
    )


def test_columns_are_numeric_features_the_test_data_has(tmp_path: Path) -> None:
    (tmp_path / "train.csv").write_text(
        "id,a,b,city,gaps,target\n1,2,3,Oslo,,0\n2,2.5,-1e3,Rome,NA,1\n3,1,0,Oslo,4.5,0\n"
    )
    (tmp_path / "test.csv").write_text("id,a,b,city,gaps\n2,3,4,Rome,1\n")
    (tmp_path / "sample_submission.csv").write_text("id,target\n2,0\n")
    # never the answer, never the id, never text a model cannot take; missing values may be
    assert columns_of(tmp_path) == ["a", "b", "gaps"]
    assert columns_of(tmp_path).gaps == {"gaps"}
    assert columns_of(tmp_path / "missing") == []


def test_the_pick_is_the_search_rngs() -> None:
    a = [pick_tweak(SCRIPT, VOCAB, random.Random(s)) for s in range(20)]
    b = [pick_tweak(SCRIPT, VOCAB, random.Random(s)) for s in range(20)]
    assert a == b and len({t.text for t in a if t}) == 4
    assert pick_tweak("print('hi')\n", VOCAB, random.Random(0)) is None
    assert isinstance(a[0], Tweak)


def test_the_bundled_model_writes_a_value_that_applies() -> None:
    """Real llama.cpp under the tweak grammar: every reply parses and changes the setting."""
    from mlagent_tui.core.llm import make_model
    from mlagent_tui.core.search.node import Node
    from mlagent_tui.core.search.operators import Context, propose

    parent = Node(id=1, operator="draft", parents=[], script=SCRIPT, status="valid", score=0.8)
    ctx = Context(problem="Predict the target.", submission="submission.csv", columns=VOCAB)
    model = make_model("local")
    try:
        for seed in range(3):
            focus = pick_tweak(SCRIPT, VOCAB, random.Random(seed))
            got = propose(model, "edit", ctx, [parent], lambda e: None, focus=focus)
            assert got.error is None and got.form == "edit"
            assert got.script != SCRIPT and focus.line not in got.script.splitlines()
    finally:
        model.close()


def test_a_value_a_sibling_holds_is_not_offered_again() -> None:
    num = next(t for t in tweaks_of(SCRIPT, VOCAB) if t.text == "1000")
    kids = [apply_tweak(SCRIPT, num, v) for v in ("100", "500", "2000")]
    picks = [pick_tweak(SCRIPT, VOCAB, random.Random(s), kids) for s in range(30)]
    left = [t for t in picks if t and t.text == "1000"]
    assert left and all(options(t, VOCAB) == ["10000"] for t in left)
    kids.append(apply_tweak(SCRIPT, num, "10000"))  # every value tried: the setting is done
    picks = [pick_tweak(SCRIPT, VOCAB, random.Random(s), kids) for s in range(30)]
    assert not [t for t in picks if t and t.text == "1000"]


def test_a_model_is_swapped_for_one_of_its_kind_everywhere() -> None:
    text = Path("tasks/text-sentiment/env/train.py").read_text()
    model = next(t for t in tweaks_of(text, []) if t.kind == "model")
    assert model.text == "MultinomialNB" and "RandomForestRegressor" not in options(model, [])
    assert "LogisticRegression" in tweak_grammar(model, [])
    new = apply_tweak(text, model, "LogisticRegression")
    compile(new, "train.py", "exec")
    assert new.count("LogisticRegression(max_iter=1000)") == 2 and "MultinomialNB()" not in new
    assert "from sklearn.linear_model import LogisticRegression\n" in new
    regressor = next(
        t for t in tweaks_of("m = Ridge(alpha=2.0).fit(x, y)\n", []) if t.kind == "model"
    )
    assert "RandomForestClassifier" not in options(regressor, [])
    with pytest.raises(ValueError, match="not a model that can replace"):
        apply_tweak(text, model, "Ridge")
    assert not [t for t in tweaks_of("x = np.Ridge(1)\n", []) if t.kind == "model"]


def test_a_model_a_sibling_holds_is_not_offered_again() -> None:
    model = next(t for t in tweaks_of(SCRIPT, VOCAB) if t.kind == "model")
    kids = [apply_tweak(SCRIPT, model, v) for v in options(model, VOCAB)[:-1]]
    picks = [pick_tweak(SCRIPT, VOCAB, random.Random(s), kids) for s in range(30)]
    left = [t for t in picks if t and t.kind == "model"]
    assert left and all(options(t, VOCAB) == ["KNeighborsClassifier"] for t in left)
    kids.append(apply_tweak(SCRIPT, model, "KNeighborsClassifier"))
    picks = [pick_tweak(SCRIPT, VOCAB, random.Random(s), kids) for s in range(30)]
    assert not [t for t in picks if t and t.kind == "model"]


def test_a_swapped_starter_writes_a_valid_submission(tmp_path: Path) -> None:
    """The bundled customer-churn starter with its model swapped runs and grades valid."""
    import subprocess
    import sys

    from mlagent_tui.core.tasks import find_task

    task = find_task("customer-churn")
    ws, private = tmp_path / "ws", tmp_path / "private"
    task.prepare(ws, private, seed=3)
    text = (ws / "train.py").read_text()
    model = next(t for t in tweaks_of(text, columns_of(ws)) if t.kind == "model")
    (ws / "solution.py").write_text(apply_tweak(text, model, "HistGradientBoostingClassifier"))
    subprocess.run([sys.executable, "solution.py"], cwd=ws, check=True, capture_output=True)
    graded = task.grade(ws, private, "validate")
    assert graded.valid, graded.error


def test_columns_a_sibling_added_are_not_offered_again() -> None:
    """Three children of one parent that each add the same columns teach the search nothing:
    a column a sibling added is offered no more, and a list with none left is done."""
    names = tweaks_of(SCRIPT, VOCAB)[0]
    kids = [apply_tweak(SCRIPT, names, '["mean_radius", "mean_texture"]')]
    picks = [pick_tweak(SCRIPT, VOCAB, random.Random(s), kids) for s in range(30)]
    left = [t for t in picks if t and t.kind == "names"]
    assert left and all(options(t, VOCAB) == ["mean_area"] for t in left)
    assert all('"\\"mean_texture\\""' not in tweak_grammar(t, VOCAB) for t in left)
    kids.append(apply_tweak(SCRIPT, names, '["mean_radius", "mean_area"]'))
    picks = [pick_tweak(SCRIPT, VOCAB, random.Random(s), kids) for s in range(30)]
    assert not [t for t in picks if t and t.kind == "names"]
    both = ["mean_radius", "radius"]  # a column whose name is part of another's
    assert options(tweaks_of('F = ["mean_radius"]\n', both)[0], both) == ["radius"]


def test_a_keyword_number_changes_in_every_call_and_seeds_and_indexes_are_left_alone() -> None:
    """The holdout model and the final one share a setting; a seed, the threads, the printed
    check's share and an index change no submission (or break it) and are not offered."""
    text = Path("tasks/noisy-shapes/env/train.py").read_text()
    found = {(t.kind, t.text, t.arg) for t in tweaks_of(text, [])}
    assert ("num", "0.1", "C") in found and ("num", "300", "max_iter") in found
    assert not {t for t in found if t[2] in ("random_state", "test_size")}
    c = next(t for t in tweaks_of(text, []) if t.arg == "C")
    assert sum(t.arg == "C" for t in tweaks_of(text, [])) == 1  # one tweak for both calls
    new = apply_tweak(text, c, "1.0")
    assert new.count("C=1.0") == 2 and "C=0.1" not in new and new.count("\n") == text.count("\n")
    scale = next(t for t in tweaks_of(text, []) if t.text == "255.0")
    assert scale.arg == "/" and sum(t.text == "255.0" for t in tweaks_of(text, [])) == 1
    assert apply_tweak(text, scale, "127.5").count("/ 127.5") == 2  # train and test alike
    churn = Path("tasks/customer-churn/env/train.py").read_text()
    assert "[:, 1]" in churn and not [t for t in tweaks_of(churn, []) if t.text == "1"]
    # two keyword arguments on one line: each call's own value, right to left
    line = "a = f(C=0.1, d=0.1) + f(C=0.1)\n"
    c = next(t for t in tweaks_of(line, []) if t.arg == "C")
    assert apply_tweak(line, c, "2") == "a = f(C=2, d=0.1) + f(C=2)\n"


def gappy(names: list[str], gaps: set[str]) -> Columns:
    out = Columns(names)
    out.gaps = frozenset(gaps)
    return out


def test_a_column_with_gaps_goes_only_to_a_model_that_takes_gaps() -> None:
    """A linear model is offered the complete columns only; a gradient boosting model all;
    where a list holds a column with gaps, a swap offers only models that take gaps."""
    vocab = gappy(["a", "b", "holes"], {"holes"})
    linear = 'F = ["a"]\nm = LogisticRegression(C=1.0)\n'
    names = next(t for t in tweaks_of(linear, vocab) if t.kind == "names")
    assert options(names, vocab) == ["b"] and "holes" not in tweak_grammar(names, vocab)
    boost = linear.replace("LogisticRegression(C=1.0)", "HistGradientBoostingClassifier()")
    names = next(t for t in tweaks_of(boost, vocab) if t.kind == "names")
    assert options(names, vocab) == ["b", "holes"]
    holding = boost.replace('["a"]', '["a", "holes"]')
    model = next(t for t in tweaks_of(holding, vocab) if t.kind == "model")
    assert set(options(model, vocab)) == TAKE_GAPS & set(CLASSIFIERS) - {model.text}
    filled = linear.replace("m = ", "train = train.fillna(0)\nm = ")
    names = next(t for t in tweaks_of(filled, vocab) if t.kind == "names")
    assert options(names, vocab) == ["b", "holes"]  # the script fills gaps itself
    # only complete columns are left for a linear model that holds them all: no such setting
    assert not [
        t for t in tweaks_of(linear.replace('["a"]', '["a", "b"]'), vocab) if t.kind == "names"
    ]


@pytest.mark.parametrize("name", sorted(TAKE_GAPS))
def test_the_models_said_to_take_gaps_fit_data_with_gaps(name: str) -> None:
    import importlib

    import numpy as np

    module = CLASSIFIERS.get(name, REGRESSORS.get(name))[0]
    x = np.array([[1.0, np.nan], [2.0, 1.0], [np.nan, 0.0], [4.0, 2.0]] * 5)
    y = np.array([0, 1, 0, 1] * 5)
    getattr(importlib.import_module(module), name)().fit(x, y).predict(x)


def test_every_column_offered_to_the_churn_starter_keeps_it_valid(tmp_path: Path) -> None:
    """customer-churn's starter fits logistic regression: each column an edit may add to its
    list (the complete ones) gives a script that runs and grades valid."""
    import subprocess
    import sys

    from mlagent_tui.core.tasks import find_task

    task = find_task("customer-churn")
    ws, private = tmp_path / "ws", tmp_path / "private"
    task.prepare(ws, private, seed=3)
    text, vocab = (ws / "train.py").read_text(), columns_of(ws)
    assert vocab.gaps  # the data has columns with gaps, and they are not offered
    names = next(t for t in tweaks_of(text, vocab) if t.kind == "names")
    offered = options(names, vocab)
    assert offered and not set(offered) & vocab.gaps
    for column in offered:
        value = names.text[:-1] + f', "{column}"]'
        (ws / "solution.py").write_text(apply_tweak(text, names, value))
        subprocess.run([sys.executable, "solution.py"], cwd=ws, check=True, capture_output=True)
        graded = task.grade(ws, private, "validate")
        assert graded.valid, (column, graded.error)
