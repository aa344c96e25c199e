"""What the Data Strategist sees of a seed task: its public files and its description."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
from pydantic import BaseModel

from ..tasks import Task, TaskError

MAX_LEVELS = 20  # a target with more distinct values is described by its statistics
MAX_COLUMNS = 40  # wider tables (images as pixels) are shown by their first columns


class SynthError(Exception):
    """A synth run that cannot start (bad seed, bad options)."""


class PublicFile(BaseModel):
    name: str
    size: int
    rows: int | None = None
    columns: dict[str, str] | None = None  # column -> dtype


class SeedFacts(BaseModel):
    name: str
    title: str
    modality: str
    task_type: str
    metric: str
    higher_is_better: bool
    id_column: str
    target_columns: list[str]
    files: list[PublicFile]
    target_summary: str
    column_names: list[str]
    description: str


def seed_targets(task: Task) -> list[str]:
    """The seed's target columns; a seed synth cannot grow from raises SynthError (one line).

    Cheap (no prepare), so the command can refuse a seed before it loads a model. A
    `[submission] columns` list may name the id column too (tasks check accepts that): it is
    the key, never a target."""
    sub = task.spec.submission
    if not sub.file.endswith(".csv") or not sub.columns or not sub.id_column:
        raise SynthError(
            f"seed task {task.name!r} has a {sub.file} submission; synth grows tasks from seeds "
            "whose submission is a CSV with an id column and target columns"
        )
    targets = [c for c in sub.columns if c != sub.id_column]
    if not targets:
        raise SynthError(
            f"seed task {task.name!r} has no target column: its [submission] columns "
            f"{sub.columns} name only the id column {sub.id_column!r}"
        )
    return targets


def describe_seed(task: Task) -> SeedFacts:
    """Prepare the seed once in a scratch folder and summarise what an agent would see."""
    targets = seed_targets(task)
    with tempfile.TemporaryDirectory(prefix="mlagent-synth-seed-") as tmp:
        public, private = Path(tmp) / "public", Path(tmp) / "private"
        try:
            task.prepare(public, private, seed=0)
        except TaskError as exc:
            raise SynthError(f"cannot prepare the seed task: {exc}") from exc
        files = [_describe_file(p, public) for p in sorted(public.rglob("*")) if p.is_file()]
        summary, columns = _train_summary(public, targets)
    return SeedFacts(
        name=task.name,
        title=task.spec.title,
        modality=task.spec.modality,
        task_type=task.spec.task_type,
        metric=task.spec.metric.name,
        higher_is_better=task.spec.metric.higher_is_better,
        id_column=task.spec.submission.id_column or "id",
        target_columns=targets,
        files=files,
        target_summary=summary,
        column_names=columns,
        description=task.description,
    )


def _describe_file(path: Path, root: Path) -> PublicFile:
    info = PublicFile(name=path.relative_to(root).as_posix(), size=path.stat().st_size)
    if path.suffix == ".csv":
        try:
            df = pd.read_csv(path)
        except Exception:  # noqa: BLE001 - a seed file we cannot parse is described by size only
            return info
        info.rows = len(df)
        info.columns = {str(c): str(t) for c, t in df.dtypes.items()}
    return info


def _train_summary(public: Path, targets: list[str]) -> tuple[str, list[str]]:
    train = public / "train.csv"
    if not train.is_file():
        return "no train.csv in the seed's public files", []
    try:
        df = pd.read_csv(train)
    except Exception as exc:  # noqa: BLE001 - the seed's data is described, never trusted
        return f"train.csv is not a readable CSV ({type(exc).__name__})", []
    return target_summary(df, targets), [str(c) for c in df.columns]


def target_summary(df: pd.DataFrame, targets: list[str]) -> str:
    """Each target's distribution in words: classes with shares, a numeric range, or text."""
    parts = []
    for col in targets:
        if col not in df.columns:
            parts.append(f"{col}: not in train.csv")
            continue
        values = df[col].dropna()
        missing = len(df) - len(values)
        note = f", {missing} missing" if missing else ""
        levels = values.nunique()
        if levels <= MAX_LEVELS:
            shares = values.value_counts(normalize=True)
            try:
                shares = shares.sort_index()
            except TypeError:  # mixed types cannot be ordered; keep the count order
                pass
            dist = ", ".join(f"{k}: {v:.1%}" for k, v in shares.items())
            parts.append(f"{col}: {levels} classes ({dist}){note}")
        elif pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            parts.append(
                f"{col}: continuous, mean {values.mean():.4g}, std {values.std():.4g}, "
                f"min {values.min():.4g}, max {values.max():.4g}{note}"
            )
        else:
            common = ", ".join(str(v)[:30] for v in values.value_counts().index[:3])
            parts.append(f"{col}: text, {levels} distinct values (most common: {common}){note}")
    return "; ".join(parts)


def seed_prompt(facts: SeedFacts) -> str:
    lines = [
        f"Seed task: {facts.title} (modality {facts.modality}, task type {facts.task_type}).",
        f"Metric: {facts.metric} ({'higher' if facts.higher_is_better else 'lower'} is better).",
        f"Submission: CSV with columns {[facts.id_column, *facts.target_columns]}.",
        f"Target in train.csv: {facts.target_summary}.",
        "Public files:",
    ]
    for f in facts.files:
        detail = "not a table"
        if f.columns is not None:
            cols = list(f.columns.items())
            shown = ", ".join(f"{c}: {t}" for c, t in cols[:MAX_COLUMNS])
            more = f", ... ({len(cols)} columns in all)" if len(cols) > MAX_COLUMNS else ""
            detail = f"{f.rows} rows, columns {{{shown}{more}}}"
        lines.append(f"- {f.name} ({f.size} bytes): {detail}")
    lines += ["", "Description the agent reads:", "", facts.description.strip()]
    return "\n".join(lines)
