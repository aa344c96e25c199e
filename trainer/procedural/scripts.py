"""The code of a procedural task: the starter train.py and the four references.

The starter is written exactly in the style of the bundled tabular baselines. Each reference
is an edit of it (same imports, names and order: FEATURES, the model, a train metric print,
the submission), so demonstrations teach "copy the starter and improve it":
median = the starter with a constant model (or, for ROC AUC, on one weak column), bronze =
every numeric column read from the data with gaps filled, silver = every column with
missing-value flags, one-hot categories and spline curves, gold = gradient-boosted trees
averaged with silver's model.
"""

from __future__ import annotations

from dataclasses import dataclass

from .design import TaskDesign

HEADER = """import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # small data: extra threads only add overhead
"""
READ = 'train = pd.read_csv("train.csv")\ntest = pd.read_csv("test.csv")\n'
PREP_IMPORTS = (
    "from sklearn.compose import make_column_transformer",
    "from sklearn.impute import SimpleImputer",
    "from sklearn.pipeline import make_pipeline",
)
CURVES = """numeric = make_pipeline(
    SimpleImputer(strategy="median", add_indicator=True), SplineTransformer(n_knots=5)
)
"""
ONEHOT = '    (OneHotEncoder(handle_unknown="ignore", sparse_output=False), CATEGORICAL),\n'


@dataclass(frozen=True)
class Style:
    """How a design's scripts name things."""

    target: str  # the target as code: TARGET or "price"
    quoted: str  # the same inside an f-string: TARGET or 'price'
    constant: str  # the TARGET = "..." line, or ""
    kind: str  # binary | multiclass | regression
    metric: str

    @classmethod
    def of(cls, design: TaskDesign) -> Style:
        name = design.target.name
        kind = design.task_type.split("-")[0]
        if design.target_var:
            return cls("TARGET", "TARGET", f'TARGET = "{name}"\n', kind, design.metric)
        return cls(f'"{name}"', f"'{name}'", "", kind, design.metric)

    @property
    def classifier(self) -> bool:
        return self.kind != "regression"

    def linear(self) -> tuple[str, str]:
        """(import line, model expression) of the starter's model."""
        if self.classifier:
            return "from sklearn.linear_model import LogisticRegression", (
                "LogisticRegression(max_iter=1000)"
            )
        return "from sklearn.linear_model import LinearRegression", "LinearRegression()"

    def regularised(self) -> tuple[str, str]:
        """(name to import from sklearn.linear_model, model) of silver's linear model."""
        if self.classifier:
            return "LogisticRegression", "LogisticRegression(max_iter=2000)"
        return "Ridge", "Ridge(alpha=1.0)"


def phrase(columns: list[str]) -> str:
    quoted = [f"`{c}`" for c in columns]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def model_phrase(style: Style) -> str:
    return "logistic regression" if style.classifier else "a linear regression"


def _imports(style: Style, *modules: str) -> str:
    plain = (["import numpy as np"] if style.kind == "regression" else []) + ["import pandas as pd"]
    froms = set(modules) | (
        {"from sklearn.metrics import roc_auc_score"} if style.metric == "roc_auc" else set()
    )
    return "\n".join(plain + sorted(froms)) + "\n"


def _fit_and_write(style: Style, x_train: str, x_test: str) -> str:
    """Fit, print a train metric, predict and write the submission: the tail of every script."""
    t, q = style.target, style.quoted
    lines = [f"model.fit({x_train}, train[{t}])"]
    if style.metric == "accuracy":
        lines.append(f'print(f"train accuracy: {{model.score({x_train}, train[{q}]):.4f}}")')
    elif style.metric == "roc_auc":
        lines.append(f"train_auc = roc_auc_score(train[{t}], model.predict_proba({x_train})[:, 1])")
        lines.append('print(f"train ROC AUC: {train_auc:.4f}")')
    elif style.metric == "rmse":
        lines.append(
            f"rmse = float(np.sqrt(np.mean((model.predict({x_train}) - train[{t}]) ** 2)))"
        )
        lines.append('print(f"train RMSE: {rmse:.4f}")')
    else:
        lines.append(f"mae = float(np.mean(np.abs(model.predict({x_train}) - train[{t}])))")
        lines.append('print(f"train MAE: {mae:.4f}")')
    lines.append("")
    if style.metric == "roc_auc":
        lines.append(f"pred = model.predict_proba({x_test})[:, 1]")
    elif style.kind == "binary":
        lines.append(f"pred = model.predict({x_test}).astype(int)")
    else:
        lines.append(f"pred = model.predict({x_test})")
    write = f'pd.DataFrame({{"id": test["id"], {t}: pred}}).to_csv("submission.csv", index=False)'
    lines += [write, 'print("wrote submission.csv")']
    return "\n".join(lines) + "\n"


def _script(doc: str, style: Style, imports: str, body: str, features: str = "") -> str:
    """Docstring, header, imports, then FEATURES and TARGET before the data is read (the
    starter's order), or TARGET alone where FEATURES is read from the data inside `body`."""
    top = (
        f"FEATURES = {features}\n{style.constant}\n"
        if features
        else (f"{style.constant}\n" if style.constant else "")
    )
    return f"{_wrap_doc(doc)}\n{HEADER}\n{imports}\n{top}{body}"


def _what(design: TaskDesign, style: Style) -> str:
    t, target = design.target.name, design.target
    if style.metric == "roc_auc":
        return f", where {t} is the predicted probability of class 1 ({target.one})"
    if style.kind == "binary":
        return f", where {t} is the predicted class: 1 = {target.one}, 0 = {target.zero}"
    return f", where {t} is the predicted class" if style.kind == "multiclass" else ""


def train_py(design: TaskDesign) -> str:
    style = Style.of(design)
    model_import, model = style.linear()
    features = design.baseline_features
    unused = len(design.order) - len(features)
    doc = (
        f'"""Baseline for {design.name}: {model_phrase(style)} on {phrase(features)}.\n\n'
        "Reads train.csv / test.csv from the current folder and writes submission.csv "
        f"(id, {design.target.name}){_what(design, style)}. The other {unused} columns are "
        'left unused, so there is headroom.\n"""\n'
    )
    body = f"{READ}\nmodel = {model}\n" + _fit_and_write(style, "train[FEATURES]", "test[FEATURES]")
    return _script(doc, style, _imports(style, model_import), body, _list(features))


def median_py(design: TaskDesign) -> str:
    """A trivial variant of the starter: a constant model (the commonest class, the mean), or
    for ROC AUC, where a constant scores no better than the sample, one weak column."""
    style = Style.of(design)
    features = design.baseline_features
    if style.metric == "roc_auc":
        model_import, model = style.linear()
        features = [design.median_feature]
        what = f"the starter's model on one weak column, {design.median_feature}"
    elif style.classifier:
        model_import = "from sklearn.dummy import DummyClassifier"
        model = 'DummyClassifier(strategy="most_frequent")'
        what = "the starter with its model replaced by the commonest training class"
    else:
        model_import = "from sklearn.dummy import DummyRegressor"
        model = 'DummyRegressor(strategy="mean")'
        what = "the starter with its model replaced by the training mean"
    doc = f'"""median reference for {design.name}: {what}."""\n'
    body = f"{READ}\nmodel = {model}\n" + _fit_and_write(style, "train[FEATURES]", "test[FEATURES]")
    return _script(doc, style, _imports(style, model_import), body, _list(features))


def _columns(t: str) -> str:
    return (
        f'FEATURES = [c for c in train.columns if c not in ("id", {t})]\n'
        "NUMERIC = [c for c in FEATURES if pd.api.types.is_numeric_dtype(train[c])]\n"
        "CATEGORICAL = [c for c in FEATURES if c not in NUMERIC]\n"
    )


def bronze_py(design: TaskDesign) -> str:
    """The starter's model on every numeric column read from the data, gaps filled."""
    style = Style.of(design)
    model_import, model = style.linear()
    doc = (
        f'"""bronze reference for {design.name}: the starter\'s model on every numeric column, '
        'gaps filled with the training median."""\n'
    )
    body = (
        f"{READ}\n"
        f'FEATURES = [c for c in train.columns if c not in ("id", {style.target})]\n'
        "FEATURES = [c for c in FEATURES if pd.api.types.is_numeric_dtype(train[c])]\n"
        "fill = train[FEATURES].median()\n"
        "X_train = train[FEATURES].fillna(fill)\n"
        "X_test = test[FEATURES].fillna(fill)\n\n"
        f"model = {model}\n" + _fit_and_write(style, "X_train", "X_test")
    )
    return _script(doc, style, _imports(style, model_import), body)


def silver_py(design: TaskDesign) -> str:
    """Every column: missing flags, one-hot categories and spline curves, a linear model."""
    style = Style.of(design)
    linear, model = style.regularised()
    imports = _imports(
        style,
        *PREP_IMPORTS,
        f"from sklearn.linear_model import {linear}",
        "from sklearn.preprocessing import OneHotEncoder, SplineTransformer",
    )
    doc = (
        f'"""silver reference for {design.name}: every column, with missing-value flags, '
        f'one-hot categories and spline curves, into {model_phrase(style)}."""\n'
    )
    body = (
        f"{READ}\n{_columns(style.target)}\n{CURVES}"
        f"prep = make_column_transformer(\n    (numeric, NUMERIC),\n{ONEHOT})\n"
        f"model = make_pipeline(prep, {model})\n"
        + _fit_and_write(style, "train[FEATURES]", "test[FEATURES]")
    )
    return _script(doc, style, imports, body)


def gold_py(design: TaskDesign) -> str:
    """Tree ensembles on every column, averaged with silver's spline model: gradient boosting,
    or for several classes a random forest (histogram boosting fits one tree per class and
    step, and with the sandbox's two OpenMP threads on a busy CPU that takes minutes)."""
    style = Style.of(design)
    linear, model = style.regularised()
    trees, what = "HistGradientBoostingClassifier", "gradient-boosted trees"
    vote, how = "VotingClassifier", '    voting="soft",\n'
    if style.kind == "multiclass":
        trees, what = "RandomForestClassifier", "a random forest"
    elif not style.classifier:
        trees, vote, how = "HistGradientBoostingRegressor", "VotingRegressor", ""
    imports = _imports(
        style,
        *PREP_IMPORTS,
        f"from sklearn.ensemble import {trees}, {vote}",
        f"from sklearn.linear_model import {linear}",
        "from sklearn.preprocessing import OneHotEncoder, SplineTransformer",
    )
    doc = (
        f'"""gold reference for {design.name}: {what} on every column, averaged with '
        'silver\'s spline model (missing-value flags, one-hot categories)."""\n'
    )
    body = (
        f"{READ}\n{_columns(style.target)}\n{CURVES}"
        f"curves = make_column_transformer(\n    (numeric, NUMERIC),\n{ONEHOT})\n"
        "prep = make_column_transformer(\n"
        '    (SimpleImputer(strategy="median", add_indicator=True), NUMERIC),\n'
        f"{ONEHOT})\n"
        f"model = {vote}(\n"
        "    [\n"
        f'        ("curves", make_pipeline(curves, {model})),\n'
        f'        ("trees", make_pipeline(prep, {trees}(random_state=0))),\n'
        f"    ],\n{how}"
        ")\n" + _fit_and_write(style, "train[FEATURES]", "test[FEATURES]")
    )
    return _script(doc, style, imports, body)


def references(design: TaskDesign) -> dict[str, str]:
    return {
        "median": median_py(design),
        "bronze": bronze_py(design),
        "silver": silver_py(design),
        "gold": gold_py(design),
    }


def _list(names: list[str]) -> str:
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"


def _wrap_doc(doc: str, width: int = 99) -> str:
    """Wrap the docstring's long lines at word boundaries (generated scripts stay readable)."""
    out = []
    for line in doc.split("\n"):
        while len(line) > width and " " in line[:width]:
            cut = line.rfind(" ", 0, width)
            out.append(line[:cut])
            line = line[cut + 1 :]
        out.append(line)
    return "\n".join(out)
