"""The four SandMLE roles: each is a system prompt plus the pydantic schema of its JSON answer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

LEVELS = ("median", "bronze", "silver", "gold")
IDENTIFIER = r"^[a-z][a-z0-9_]{0,39}$"


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StructuralDNA(_Answer):
    """What the seed is, stripped of its domain: the shape a new scenario must keep."""

    modality: str
    task_type: str
    sample_count: int = Field(ge=1)
    imbalance: str
    target_cardinality: int = Field(ge=1)
    target_distribution: str


class Scenario(_Answer):
    name: str = Field(min_length=3, max_length=80)
    summary: str = Field(min_length=10)


class Mutation(_Answer):
    booster: str = Field(min_length=3)  # noise, blur, imbalance, missing values, typos, ...
    setting: str = Field(min_length=3)


class Feature(_Answer):
    name: str = Field(pattern=IDENTIFIER)
    dtype: Literal["float", "int", "category", "text"]
    description: str = ""


class Level(_Answer):
    method: str = Field(min_length=3)
    expected: float | None = None  # the score the strategist expects this method to reach


class ThresholdLogic(_Answer):
    median: Level
    bronze: Level
    silver: Level
    gold: Level


class TaskSpecDraft(_Answer):
    """The merged, concrete specification the developer implements."""

    scenario: str = Field(min_length=3)
    title: str = Field(min_length=3, max_length=80)
    features: list[Feature] = Field(min_length=2, max_length=40)
    target: str = Field(pattern=IDENTIFIER)
    target_values: str
    hidden_rule: str = Field(min_length=5)  # y = f(x) + noise, as a formula over feature names
    rule_text: str = Field(min_length=5)  # the same rule in words
    noise: str
    n_samples: int = Field(ge=50, le=200)
    metric: str
    higher_is_better: bool
    thresholds: ThresholdLogic

    @model_validator(mode="after")
    def _names(self) -> TaskSpecDraft:
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            raise ValueError("feature names must be unique")
        if "id" in names or self.target in names:
            raise ValueError("features must not include 'id' or the target column")
        if self.target == "id":
            raise ValueError("the target column cannot be called 'id'")
        return self


class StrategistAnswer(_Answer):
    dna: StructuralDNA
    scenarios: list[Scenario] = Field(min_length=5, max_length=5)
    mutations: list[Mutation] = Field(min_length=3, max_length=3)
    spec: TaskSpecDraft


class References(_Answer):
    median: str = Field(min_length=20)
    bronze: str = Field(min_length=20)
    silver: str = Field(min_length=20)
    gold: str = Field(min_length=20)


class DeveloperAnswer(_Answer):
    prepare_py: str = Field(min_length=50)
    train_py: str = Field(min_length=20)
    references: References


class GraderAnswer(_Answer):
    grade_py: str = Field(min_length=50)

    @field_validator("grade_py")
    @classmethod
    def _entry(cls, v: str) -> str:
        if "__main__" not in v:
            raise ValueError("grade_py must be a runnable script (an `if __name__ == ...` block)")
        return v


class WriterAnswer(_Answer):
    description_md: str = Field(min_length=200)


ANSWER_RULE = (
    "Answer with one JSON object only (a ```json fenced block is fine), matching exactly the "
    "schema below. Code goes in JSON strings (escape newlines as \\n)."
)

STRATEGIST = f"""You are the Data Strategist of a team that turns a real machine-learning task into
synthetic micro-scale tasks (50 to 200 samples) that keep its structure but run in seconds.

1. Read the seed task (its public files and its description) and write its structural DNA:
   modality, task type, sample count, class imbalance, target cardinality and distribution.
   Use NO domain words of the seed in the DNA: no column names, no subject matter.
2. Propose 5 domain scenarios, each from a different field, that fit that structure.
3. Choose a mutation config of 3 difficulty boosters suited to the modality (noise, label noise,
   imbalance, missing values, outliers, distractor features, typos, blur, ...).
4. Merge one scenario and the boosters into a concrete specification: feature names
   (snake_case), the target column, a hidden rule y = f(x) + noise over those features (a formula),
   the same rule in words, 50 to 200 samples in total, the metric and direction of the seed, and
   the logic of the thresholds: median = a trivial baseline, bronze = a simple model, silver = a
   stronger model, gold = the noise ceiling (the hidden rule itself without noise). Give the score
   you expect each method to reach; they must be strictly ordered in the metric's direction.

{ANSWER_RULE}"""

DEVELOPER = f"""You are the MLE Developer. Implement the specification as a task in this format:

prepare.py — run as `python prepare.py --public DIR --private DIR --seed N`. Only the standard
library, numpy, pandas and scikit-learn; no network; deterministic for a given seed (same bytes
twice); a few seconds. It generates the samples from the hidden rule, splits them into train and
test, and writes into --public: train.csv (id, features, target), test.csv (id, features, no
target) and sample_submission.csv (id, target: a valid but poor constant prediction, worse than
the trivial baseline); into --private: validate.csv and test.csv (id, target), which split the
public test rows in two halves. It computes the thresholds by actually training the baseline
methods of the specification on train and scoring them on the private test half with the task's
metric, and prints one line `THRESHOLDS {{"median": m, "bronze": b, "silver": s, "gold": g}}`.

train_py — the starter baseline the agent gets (the simple model): reads train.csv and test.csv
from the current folder, writes submission.csv (id, target).

references — four scripts (median, bronze, silver, gold) that run like train.py in a prepared
folder and write submission.csv; each one is the method whose score set that threshold (gold may
apply the hidden rule itself: these scripts stay private).

{ANSWER_RULE}"""

MLOPS = f"""You are the MLOps Engineer. Write private/grade.py for the task below. Contract:
`python grade.py --submission PATH --answers DIR --split validate|test` prints exactly one JSON
object {{"score": float|null, "valid": bool, "error": str|null}} and never crashes on a bad
submission. Import only from mlagent_tui.taskkit (the task authors' module:
submission readers, checks and metrics), numpy and pandas:

    from mlagent_tui.taskkit import (
        SubmissionError, check_range, check_whole, load_answers, load_csv_submission, run_grader)
    from mlagent_tui.taskkit import accuracy, log_loss, macro_f1, mae, rmse, roc_auc, smape

    def grade(submission, answers_dir, split):
        answers = load_answers(answers_dir, split)          # DataFrame of <split>.csv
        sub = load_csv_submission(submission, id_column="id", columns=[TARGET], answers=answers)
        ...                                                  # raise SubmissionError when invalid
        return accuracy(answers[TARGET], sub[TARGET])        # or the task's metric

    if __name__ == "__main__":
        run_grader(grade)

It is run on the sample submission (must be valid), on the answers themselves (must reach the gold
threshold) and on garbage (empty, not CSV, wrong columns, missing ids, duplicate ids, missing
values: each must be reported as invalid, with an error).

{ANSWER_RULE}"""

WRITER = f"""You are the Technical Writer. Write description.md, the only text the agent reads,
in the voice and layout of the seed task's description (shown below). Name every file
(train.csv, test.csv, sample_submission.csv, train.py, submission.csv), every column, the target,
the metric and its direction ("higher is better" or "lower is better") and the exact submission
format. Never reveal the hidden rule, its formula or coefficients, or any answer.

{ANSWER_RULE}"""
