"""The model swap, an edit a small model can carry out: where the parent fits a known
scikit-learn estimator, the model picks another of its kind (a classifier for a classifier, a
regressor for a regressor) and the harness rewrites every call of the old one and adds the
import. The new call's numbers are settings the next edits can change.

A 135M model never wrote a different model into a whole script on the bundled tasks: it copied
the starter's. Most of the headroom of a tabular starter (a linear model on a few columns) is
in the choice of model, so the search offers that choice as one pick among a few names.
"""

from __future__ import annotations

import ast

# name -> (module, the call written in its place: settings that suit small data on one core)
CLASSIFIERS: dict[str, tuple[str, str]] = {
    "LogisticRegression": ("sklearn.linear_model", "LogisticRegression(max_iter=1000)"),
    "RandomForestClassifier": (
        "sklearn.ensemble",
        "RandomForestClassifier(n_estimators=200, random_state=0)",
    ),
    "ExtraTreesClassifier": (
        "sklearn.ensemble",
        "ExtraTreesClassifier(n_estimators=200, random_state=0)",
    ),
    "HistGradientBoostingClassifier": (
        "sklearn.ensemble",
        "HistGradientBoostingClassifier(max_iter=200, random_state=0)",
    ),
    "GradientBoostingClassifier": (
        "sklearn.ensemble",
        "GradientBoostingClassifier(n_estimators=100, random_state=0)",
    ),
    "KNeighborsClassifier": ("sklearn.neighbors", "KNeighborsClassifier(n_neighbors=15)"),
}
REGRESSORS: dict[str, tuple[str, str]] = {
    "Ridge": ("sklearn.linear_model", "Ridge(alpha=1.0)"),
    "LinearRegression": ("sklearn.linear_model", "LinearRegression()"),
    "RandomForestRegressor": (
        "sklearn.ensemble",
        "RandomForestRegressor(n_estimators=200, random_state=0)",
    ),
    "ExtraTreesRegressor": (
        "sklearn.ensemble",
        "ExtraTreesRegressor(n_estimators=200, random_state=0)",
    ),
    "HistGradientBoostingRegressor": (
        "sklearn.ensemble",
        "HistGradientBoostingRegressor(max_iter=200, random_state=0)",
    ),
    "GradientBoostingRegressor": (
        "sklearn.ensemble",
        "GradientBoostingRegressor(n_estimators=100, random_state=0)",
    ),
    "KNeighborsRegressor": ("sklearn.neighbors", "KNeighborsRegressor(n_neighbors=15)"),
}
# estimators a parent may hold that are swapped from, but not offered (no predict_proba, or
# inputs they alone accept)
OTHER_CLASSIFIERS = (
    "MultinomialNB",
    "GaussianNB",
    "BernoulliNB",
    "SVC",
    "LinearSVC",
    "DecisionTreeClassifier",
    "SGDClassifier",
    "RidgeClassifier",
)
OTHER_REGRESSORS = ("Lasso", "ElasticNet", "SVR", "LinearSVR", "DecisionTreeRegressor")
# estimators that fit data with missing values as it is (scikit-learn 1.4+ for the forests,
# 1.6+ for extra trees; tests/test_search_tweak.py fits each on data with gaps): the only ones
# an edit may give a column with gaps, and the only ones a swap offers where the script's
# column lists already hold one
TAKE_GAPS = frozenset(
    {
        "HistGradientBoostingClassifier",
        "HistGradientBoostingRegressor",
        "RandomForestClassifier",
        "RandomForestRegressor",
        "ExtraTreesClassifier",
        "ExtraTreesRegressor",
    }
)


def family(name: str) -> dict[str, tuple[str, str]] | None:
    """The estimators `name` may be swapped for, or None if it is not a known estimator."""
    if name in CLASSIFIERS or name in OTHER_CLASSIFIERS:
        return CLASSIFIERS
    if name in REGRESSORS or name in OTHER_REGRESSORS:
        return REGRESSORS
    return None


def alternatives(name: str) -> list[str]:
    return [n for n in family(name) or {} if n != name]


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
    ]


def calls_of(script: str, name: str) -> int:
    """How many calls of `name` the script makes (0 where it does not parse)."""
    try:
        return len(_calls(ast.parse(script), name))
    except (SyntaxError, ValueError):
        return 0


def swap(script: str, old: str, new: str) -> str:
    """`script` with every call of `old` (its arguments included) replaced by `new`'s call,
    and `new`'s import added after the last import at the top level."""
    fam = family(old)
    if fam is None or new not in fam:
        raise ValueError(f"{new} is not a model that can replace {old}")
    module, call = fam[new]
    tree = ast.parse(script)
    lines = script.splitlines(keepends=True)
    for node in sorted(_calls(tree, old), key=lambda n: (n.lineno, n.col_offset), reverse=True):
        first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[operator]
        head = lines[first][: _byte_col(lines[first], node.col_offset)]
        tail = lines[last][_byte_col(lines[last], node.end_col_offset) :]  # type: ignore[arg-type]
        lines[first : last + 1] = [head + call + tail]
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    at = imports[-1].end_lineno if imports else 0
    lines.insert(at or 0, f"from {module} import {new}\n")
    return "".join(lines)


def _byte_col(line: str, offset: int) -> int:
    """ast's column offsets count UTF-8 bytes: the character index they point at."""
    return len(line.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))
