"""Replay answers for the four SandMLE roles, with real, working generated code.

The candidate task: 160 seedlings, 5 features, a hidden logistic rule with label noise, about a
third positives, missing values in a distractor feature. Its prepare.py trains the threshold
methods for real; its references and baseline are the same methods as scripts.
"""

from __future__ import annotations

import json
from typing import Any

FEATURES = ["soil_moisture", "light_hours", "air_temp", "nitrogen_ppm", "sensor_drift"]
RULE = "y = 1[1.6*soil_moisture + 1.1*light_hours - 1.4*air_temp - 0.8 + noise > 0]"
RULE_TEXT = "survival rises with moisture and light and falls with heat"

PREPARE = '''"""Seedling survival: 160 synthetic seedlings from a hidden logistic rule."""
import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

FEATURES = ["soil_moisture", "light_hours", "air_temp", "nitrogen_ppm", "sensor_drift"]


def make(seed):
    rng = np.random.default_rng(seed + 1)
    n = 160
    x = rng.normal(size=(n, 5))
    logit = 1.6 * x[:, 0] + 1.1 * x[:, 1] - 1.4 * x[:, 2] - 0.8
    y = (logit + rng.logistic(scale=0.6, size=n) > 0).astype(int)
    df = pd.DataFrame(np.round(x, 4), columns=FEATURES)
    df.loc[rng.random(n) < 0.1, "sensor_drift"] = np.nan
    df.insert(0, "id", rng.permutation(n) + 1)
    df["survived"] = y
    df["_rule"] = (logit > 0).astype(int)
    return df


def scores(train, test):
    majority = int(train["survived"].mode()[0])
    acc = lambda pred: float(np.mean(pred == test["survived"].to_numpy()))
    bronze = LogisticRegression().fit(train[["soil_moisture"]], train["survived"])
    silver = make_pipeline(SimpleImputer(), LogisticRegression()).fit(
        train[FEATURES], train["survived"]
    )
    return {
        "median": acc(np.full(len(test), majority)),
        "bronze": acc(bronze.predict(test[["soil_moisture"]])),
        "silver": acc(silver.predict(test[FEATURES])),
        "gold": acc(test["_rule"].to_numpy()),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--public", type=Path, required=True)
    p.add_argument("--private", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    df = make(a.seed)
    train, validate, test = df.iloc[:96], df.iloc[96:128], df.iloc[128:]
    public_test = pd.concat([validate, test]).sort_values("id")
    train.drop(columns=["_rule"]).sort_values("id").to_csv(a.public / "train.csv", index=False)
    public_test[["id", *FEATURES]].to_csv(a.public / "test.csv", index=False)
    sample = pd.DataFrame({"id": public_test["id"], "survived": 1})
    sample.to_csv(a.public / "sample_submission.csv", index=False)
    validate.sort_values("id")[["id", "survived"]].to_csv(a.private / "validate.csv", index=False)
    test.sort_values("id")[["id", "survived"]].to_csv(a.private / "test.csv", index=False)
    print("THRESHOLDS " + json.dumps(scores(train, test)))


if __name__ == "__main__":
    main()
'''

_SCRIPT = """{imports}import numpy as np
import pandas as pd

FEATURES = ["soil_moisture", "light_hours", "air_temp", "nitrogen_ppm", "sensor_drift"]
train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
{body}
pd.DataFrame({{"id": test["id"], "survived": pred.astype(int)}}).to_csv(
    "submission.csv", index=False
)
print("wrote submission.csv")
"""

LR = "from sklearn.linear_model import LogisticRegression\n"
PIPE = "from sklearn.impute import SimpleImputer\nfrom sklearn.pipeline import make_pipeline\n"
BODIES = {
    "median": ("", 'pred = np.full(len(test), int(train["survived"].mode()[0]))'),
    "bronze": (
        LR,
        'model = LogisticRegression().fit(train[["soil_moisture"]], train["survived"])\n'
        'pred = model.predict(test[["soil_moisture"]])',
    ),
    "silver": (
        PIPE + LR,
        "model = make_pipeline(SimpleImputer(), LogisticRegression())\n"
        'model.fit(train[FEATURES], train["survived"])\n'
        "pred = model.predict(test[FEATURES])",
    ),
    "gold": (
        "",
        'logit = 1.6 * test["soil_moisture"] + 1.1 * test["light_hours"] '
        '- 1.4 * test["air_temp"] - 0.8\n'
        "pred = (logit > 0).to_numpy()",
    ),
}
REFERENCES = {lvl: _SCRIPT.format(imports=i, body=b) for lvl, (i, b) in BODIES.items()}
TRAIN = '"""Baseline: logistic regression on soil_moisture alone."""\n' + REFERENCES["bronze"]

GRADE = '''"""Accuracy of the predicted survival class (1 = survived); higher is better."""
import numpy as np

from mlagent_tui.taskkit import (
    SubmissionError, load_answers, load_csv_submission, run_grader)


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["survived"], answers=answers)
    values = sub["survived"].to_numpy(dtype=float)
    if ((values < 0) | (values > 1)).any():
        raise SubmissionError("survived must be 0 or 1 (or a probability in [0, 1])")
    pred = (values >= 0.5).astype(int)
    return float(np.mean(pred == answers["survived"].to_numpy(dtype=int)))


if __name__ == "__main__":
    run_grader(grade)
'''

# Reads whatever it is given: crashes on an empty file, accepts missing ids.
NAIVE_GRADE = """import argparse, json
import pandas as pd

p = argparse.ArgumentParser()
p.add_argument("--submission"); p.add_argument("--answers"); p.add_argument("--split")
a = p.parse_args()
sub = pd.read_csv(a.submission)
ans = pd.read_csv(a.answers + "/" + a.split + ".csv")
m = ans.merge(sub, on="id")
score = float((m["survived_x"] == (m["survived_y"] >= 0.5)).mean())
if __name__ == "__main__":
    print(json.dumps({"score": score, "valid": True, "error": None}))
"""

CRASHING_PREPARE = PREPARE.replace("n = 160", "n = 160 // 0")
NETWORK_PREPARE = PREPARE.replace(
    "def main():",
    "def main():\n    import urllib.request\n"
    '    urllib.request.urlopen("http://93.184.216.34/data.csv", timeout=5)\n',
)
SLOW_PREPARE = PREPARE.replace("def main():", "def main():\n    import time\n    time.sleep(600)\n")
UNORDERED_PREPARE = PREPARE.replace(
    'print("THRESHOLDS " + json.dumps(scores(train, test)))',
    'print("THRESHOLDS " + json.dumps({"median": 0.6, "bronze": 0.9, "silver": 0.8, '
    '"gold": 0.95}))',
)

GUESSED_PREPARE = PREPARE.replace(
    'print("THRESHOLDS " + json.dumps(scores(train, test)))',
    'print("THRESHOLDS " + json.dumps({"median": 0.3, "bronze": 0.5, "silver": 0.6, "gold": 0.7}))',
)

DESCRIPTION = """# Seedling survival

Each row is a seedling in a greenhouse trial, measured a week after planting. Predict whether it
**survived** the month (`survived` = 1) or not (`survived` = 0). Train on `train.csv` only.

## Files

- `train.csv` — 96 seedlings with their `survived` label.
- `test.csv` — 64 more seedlings, without the label. Predict every row: half of them are used by
  `validate`, the other half (hidden) by `submit`.
- `sample_submission.csv` — a valid submission in the right format (everything survives; it
  scores badly).
- `train.py` — a baseline: logistic regression on `soil_moisture` alone. It writes
  `submission.csv`.

## Columns

`id`, then five numeric measurements, standardised: `soil_moisture`, `light_hours`, `air_temp`,
`nitrogen_ppm` and `sensor_drift` (a probe reading; about one in ten is missing). Then `survived`
(train only): 1 = survived, 0 = died.

## Metric

Accuracy: the fraction of seedlings whose outcome is predicted correctly. **Higher is better.**

## Submission

`submission.csv`, one row for every `id` in `test.csv`, with exactly these columns:

```
id,survived
3,1
8,0
...
```

`survived` is the predicted class, 0 or 1; a probability in [0, 1] is read as 1 from 0.5 up.
"""

LEAKY_DESCRIPTION = DESCRIPTION.replace(
    "Train on `train.csv` only.",
    "Hint: the outcome follows 1.6*soil_moisture + 1.1*light_hours - 1.4*air_temp - 0.8 "
    "plus noise. Train on `train.csv` only.",
)


def fenced(obj: dict[str, Any]) -> str:
    return "Here is my answer.\n```json\n" + json.dumps(obj, indent=1) + "\n```\n"


def strategist(
    scenario: str = "greenhouse seedling survival", expected: list[float] | None = None
) -> str:
    expected = expected or [0.6, 0.75, 0.85, 0.9]
    levels = [
        "trivial majority class",
        "logistic regression on one feature",
        "logistic regression on all features",
        "the hidden rule without noise",
    ]
    return fenced(
        {
            "dna": {
                "modality": "tabular",
                "task_type": "binary-classification",
                "sample_count": 569,
                "imbalance": "minority class about 37%",
                "target_cardinality": 2,
                "target_distribution": "0: 62.7%, 1: 37.3%",
            },
            "scenarios": [
                {"name": scenario, "summary": "will a seedling survive its first month"},
                {"name": "loan default", "summary": "does a small loan get repaid"},
                {"name": "machine failure", "summary": "does a pump fail within a week"},
                {"name": "churn", "summary": "does a subscriber cancel"},
                {"name": "wildfire ignition", "summary": "does a dry day see a fire start"},
            ],
            "mutations": [
                {"booster": "label noise", "setting": "logistic noise, scale 0.6"},
                {"booster": "missing values", "setting": "10% of one distractor feature"},
                {"booster": "imbalance", "setting": "about one third positives"},
            ],
            "spec": {
                "scenario": scenario,
                "title": "Seedling survival",
                "features": [{"name": f, "dtype": "float", "description": f} for f in FEATURES],
                "target": "survived",
                "target_values": "0 or 1",
                "hidden_rule": RULE,
                "rule_text": RULE_TEXT,
                "noise": "logistic, scale 0.6",
                "n_samples": 160,
                "metric": "accuracy",
                "higher_is_better": True,
                "thresholds": {
                    lvl: {"method": m, "expected": e}
                    for lvl, m, e in zip(
                        ["median", "bronze", "silver", "gold"], levels, expected, strict=True
                    )
                },
            },
        }
    )


def developer(prepare: str = PREPARE) -> str:
    return fenced({"prepare_py": prepare, "train_py": TRAIN, "references": REFERENCES})


def grader(code: str = GRADE) -> str:
    return fenced({"grade_py": code})


def writer(text: str = DESCRIPTION) -> str:
    return fenced({"description_md": text})


# The rule in other words, with no number of it: the number floor cannot see it, a judge can.
REWORDED_DESCRIPTION = DESCRIPTION.replace(
    "Train on `train.csv` only.",
    "Seedlings survive when the soil is wet and the days are long, and die in the heat; the "
    "nitrogen and drift readings do not matter. Train on `train.csv` only.",
)
REWORDED_QUOTE = "Seedlings survive when the soil is wet and the days are long"


def judge(leaks: bool = False, quote: str = "") -> str:
    """The leak judge's verdict."""
    return fenced({"leaks": leaks, "quote": quote})
