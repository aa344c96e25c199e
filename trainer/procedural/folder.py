"""Writing a procedural task folder: prepare.py, env/, private/ and, once measured, task.toml
and description.md, in the same shape and sections as the bundled tabular tasks."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from mlagent_tui.core.synth.taskfolder import dumps_toml
from mlagent_tui.core.tasks import TaskSpec

from .design import TaskDesign
from .scripts import Style, model_phrase, phrase, references, train_py

TEMPLATE = Path(__file__).with_name("prepare_template.py")
PLACEHOLDER = 'DESIGN: dict = json.loads("{}")'
LEVELS = ("median", "bronze", "silver", "gold")

GRADE_HEAD = '''"""Grader for {name}: {what}."""

import numpy as np
{extra}
from mlagent_tui.taskkit import (
{names}
)


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(
        submission, id_column="id", columns=["{t}"], answers=answers{numeric}
    )
'''
GRADE_TAIL = """


if __name__ == "__main__":
    run_grader(grade)
"""
GRADE_BODY = {
    "accuracy-binary": """    values = sub["{t}"].to_numpy(dtype=float)
    if ((values < 0) | (values > 1)).any():
        raise SubmissionError("column '{t}' must hold 0 or 1 (or a probability in [0, 1])")
    pred = (values >= 0.5).astype(int)
    return float(np.mean(pred == answers["{t}"].to_numpy(dtype=int)))""",
    "accuracy-numbers": """    pred = sub["{t}"].to_numpy(dtype=float)
    if not np.all(pred == np.round(pred)):
        raise SubmissionError("column '{t}' must hold whole numbers (class numbers)")
    truth = answers["{t}"].to_numpy(dtype=np.int64)
    return float(np.mean(pred.astype(np.int64) == truth))""",
    "accuracy-words": """    pred = sub["{t}"].astype(str).str.strip().to_numpy()
    return float(np.mean(pred == answers["{t}"].astype(str).to_numpy()))""",
    "roc_auc": """    labels = answers["{t}"].to_numpy(dtype=int)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("the answers hold a single class; ROC AUC is undefined")
    # from ranks (Mann-Whitney U, ties counted half): equals sklearn's roc_auc_score
    ranks = pd.Series(sub["{t}"].to_numpy(dtype=float)).rank(method="average").to_numpy()
    return float((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))""",
    "rmse": """    err = sub["{t}"].to_numpy(dtype=float) - answers["{t}"].to_numpy(dtype=float)
    with np.errstate(over="ignore"):  # absurd values give inf, reported as invalid
        return float(np.sqrt(np.mean(err**2)))""",
    "mae": """    err = sub["{t}"].to_numpy(dtype=float) - answers["{t}"].to_numpy(dtype=float)
    with np.errstate(over="ignore"):  # absurd values give inf, reported as invalid
        return float(np.mean(np.abs(err)))""",
}
WHAT = {
    "accuracy-binary": "accuracy of the predicted class, higher is better",
    "accuracy-numbers": "accuracy of the predicted class number, higher is better",
    "accuracy-words": "accuracy of the predicted class, higher is better",
    "roc_auc": "ROC AUC of the scores, higher is better",
    "rmse": "RMSE of the prediction, lower is better",
    "mae": "mean absolute error of the prediction, lower is better",
}


def grader_kind(design: TaskDesign) -> str:
    if design.metric != "accuracy":
        return design.metric
    if design.task_type == "binary-classification":
        return "accuracy-binary"
    labels = design.target.labels
    return "accuracy-numbers" if all(lbl.isdigit() for lbl in labels) else "accuracy-words"


def grade_py(design: TaskDesign) -> str:
    kind, t = grader_kind(design), design.target.name
    names = ["load_answers", "load_csv_submission", "run_grader"]
    if kind in ("accuracy-binary", "accuracy-numbers"):
        names.insert(0, "SubmissionError")
    head = GRADE_HEAD.format(
        name=design.name,
        what=WHAT[kind],
        extra="import pandas as pd\n" if kind == "roc_auc" else "",
        names="".join(f"    {n},\n" for n in names).rstrip("\n"),
        t=t,
        numeric=", numeric=False" if kind == "accuracy-words" else "",
    )
    return head + GRADE_BODY[kind].format(t=t) + GRADE_TAIL


def prepare_py(design: TaskDesign) -> str:
    data = design.model_dump(
        include={
            "name",
            "data_seed",
            "task_type",
            "metric",
            "rows",
            "train_rows",
            "id_offset",
            "order",
            "numeric",
            "categorical",
            "target",
            "signals",
        }
    )
    text = TEMPLATE.read_text(encoding="utf-8")
    if PLACEHOLDER not in text:
        raise RuntimeError(f"{TEMPLATE} lost its placeholder line {PLACEHOLDER!r}")
    literal = f'DESIGN: dict = json.loads(\n    r"""\n{json.dumps(data, indent=1)}\n"""\n)'
    return text.replace(PLACEHOLDER, literal)


def write_code(design: TaskDesign, folder: Path) -> None:
    """Everything but task.toml and description.md, which need the measured scores."""
    (folder / "env").mkdir(parents=True, exist_ok=True)
    (folder / "private" / "reference").mkdir(parents=True, exist_ok=True)
    (folder / "prepare.py").write_text(prepare_py(design), encoding="utf-8")
    (folder / "env" / "train.py").write_text(train_py(design), encoding="utf-8")
    (folder / "private" / "grade.py").write_text(grade_py(design), encoding="utf-8")
    for level, code in references(design).items():
        (folder / "private" / "reference" / f"{level}.py").write_text(code, encoding="utf-8")


def task_toml(design: TaskDesign, baseline: float, thresholds: dict[str, float]) -> str:
    data = {
        "name": design.name,
        "title": design.title,
        "modality": "tabular",
        "task_type": design.task_type,
        "source": f"procedural (mlagent-train procedural --seed {design.seed}), task "
        f"{design.index}, attempt {design.attempt}: synthetic {design.domain} data",
        "read_only": ["train.csv", "test.csv"],
        "metric": {"name": design.metric, "higher_is_better": design.higher_is_better},
        "submission": {
            "file": "submission.csv",
            "columns": [design.target.name],
            "id_column": "id",
        },
        "baseline": {"command": "python train.py", "score": round(baseline, 6)},
        "thresholds": {lvl: thresholds[lvl] for lvl in LEVELS},
        "limits": {"exec_timeout_s": 60, "mem_mb": 1024, "max_steps": 30},
        "validate": {"mode": "score"},
    }
    TaskSpec.model_validate(data)  # the strict model that reads it back
    return dumps_toml(data)


METRIC_TEXT = {
    "accuracy": "Accuracy: the fraction of {rows} whose class is predicted correctly. "
    "**Higher is better.**",
    "roc_auc": "Area under the ROC curve (ROC AUC) of your scores against the true labels. "
    "**Higher is better.**\nOnly the ranking of the scores matters; probabilities are the "
    "natural choice.",
    "rmse": "Root mean squared error (RMSE) of `{t}`. **Lower is better.**",
    "mae": "Mean absolute error (MAE) of `{t}`. **Lower is better.**",
}


def _column_rows(design: TaskDesign) -> list[str]:
    numeric = {c.name: c for c in design.numeric}
    categories = {c.name: c for c in design.categorical}
    rows = ["| column | meaning |", "| --- | --- |", f"| `id` | {design.rows_noun[:-1]} id |"]
    for name in design.order:
        if name in numeric:
            col = numeric[name]
            note = " (some missing)" if col.missing else ""
            rows.append(f"| `{name}` | {col.meaning}{note} |")
        else:
            cat = categories[name]
            levels = ", ".join(f"`{lvl}`" for lvl in cat.levels)
            rows.append(f"| `{name}` | {cat.meaning}: {levels} (categorical) |")
    t = design.target
    if design.task_type == "binary-classification":
        meaning = f"1 = {t.one}, 0 = {t.zero}"
    elif design.task_type == "multiclass-classification":
        meaning = f"{t.meaning}, one of " + ", ".join(f"`{lbl}`" for lbl in t.labels)
    else:
        meaning = t.meaning
    rows.append(f"| `{t.name}` | **target**: {meaning} (train only) |")
    return rows


def _value_rule(design: TaskDesign) -> str:
    t = design.target.name
    kind = grader_kind(design)
    if kind == "accuracy-binary":
        return (
            f"`{t}` is the predicted class, 0 or 1. A probability in [0, 1] is also accepted and "
            "read as class 1 when it is at least 0.5; values outside [0, 1] make the submission "
            "invalid."
        )
    if kind == "accuracy-numbers":
        return (
            f"`{t}` must be a whole number, the predicted class: "
            + ", ".join(design.target.labels)
            + "."
        )
    if kind == "accuracy-words":
        labels = ", ".join(f"`{lbl}`" for lbl in design.target.labels)
        return f"`{t}` must be the predicted class as written in train.csv: {labels}."
    if kind == "roc_auc":
        return f"`{t}` must be a finite number for every row (not NaN)."
    return f"`{t}` must be a finite number for every row."


def _example(design: TaskDesign, ids: list[int]) -> list[str]:
    t = design.target
    if design.metric == "roc_auc":
        values = ["0.81", "0.12"]
    elif design.task_type == "binary-classification":
        values = ["1", "0"]
    elif design.task_type == "multiclass-classification":
        values = [t.labels[-1], t.labels[0]]
    else:
        values = [f"{t.mean * 1.1:.{t.dec}f}", f"{t.mean * 0.8:.{t.dec}f}"]
    return [f"id,{t.name}"] + [f"{i},{v}" for i, v in zip(ids, values, strict=False)] + ["..."]


def description_md(design: TaskDesign, test_rows: int, ids: list[int], sample: str) -> str:
    t = design.target.name
    style = Style.of(design)
    if design.task_type == "regression":
        ask = f"Predict `{t}`: {design.target.meaning}."
    elif design.task_type == "binary-classification":
        how = "how likely it is that" if design.metric == "roc_auc" else "whether"
        ask = f"Predict, for each row, {how} `{t}` is 1 ({design.target.one})."
    else:
        n = len(design.target.labels)
        ask = f"Predict `{t}` ({design.target.meaning}), one of {n} classes."
    missing = [c.name for c in design.numeric if c.missing]
    notes = []
    if missing:
        notes.append(
            "Some columns have missing values (empty cells, read as NaN); whether a value is "
            "missing can itself carry information."
        )
    if design.categorical:
        notes.append("Some columns are categorical strings.")
    features = phrase(design.baseline_features)
    parts = [
        f"# {design.title}",
        "",
        f"{design.intro} {ask}",
        "",
        *([" ".join(notes), ""] if notes else []),
        "Train on `train.csv` only.",
        "",
        "## Files",
        "",
        f"- `train.csv` — {design.train_rows:,} {design.rows_noun} with their `{t}`.",
        f"- `test.csv` — {test_rows:,} more {design.rows_noun}, without it. Predict every row: "
        "half of them are used by `validate`, the other half (hidden) by `submit`.",
        f"- `sample_submission.csv` — a valid submission in the right format ({sample}; it "
        "scores badly).",
        f"- `train.py` — a baseline: {model_phrase(style)} on {features} only. It writes "
        "`submission.csv`.",
        "",
        "## Columns",
        "",
        *_column_rows(design),
        "",
        "## Metric",
        "",
        METRIC_TEXT[design.metric].format(rows=design.rows_noun, t=t),
        "",
        "## Submission",
        "",
        "`submission.csv`, one row for every `id` in `test.csv`, with exactly these columns:",
        "",
        "```",
        *_example(design, ids),
        "```",
        "",
        _value_rule(design),
        "",
    ]
    return "\n".join(_wrap(line) for line in parts)


def _wrap(line: str, width: int = 100) -> str:
    """Wrap prose and bullets like the bundled descriptions; tables and code stay as they are."""
    if len(line) <= width or line.startswith(("|", "#", "```")):
        return line
    indent = "  " if line.startswith("- ") else ""
    return textwrap.fill(
        line, width=width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )
