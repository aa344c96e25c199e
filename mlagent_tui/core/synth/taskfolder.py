"""Assemble a candidate into an ordinary task folder; task.toml comes from spec + measurements."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..tasks import OLDEST_CONTRACT, TaskSpec
from .roles import LEVELS, DeveloperAnswer, GraderAnswer, TaskSpecDraft, WriterAnswer
from .seed import SeedFacts

MAX_EXEC_TIMEOUT_S = 60
# A generated grader reads a CSV and never runs agent code, so it needs no backend flag: it is
# promised the fewest flags (version 1: --submission, --answers, --split), which is also how the
# grader stage runs it in the sandbox (execution.DRIVER), so a grader that passed is never handed
# a flag it did not parse.
GENERATED_CONTRACT = OLDEST_CONTRACT


def slug(text: str, limit: int = 24) -> str:
    """Lower-case words joined by '-', as many whole words as fit in `limit` (a single word
    longer than that is the only thing ever cut)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    if not words:
        return "task"
    kept = words[0][:limit]
    for word in words[1:]:
        if len(kept) + 1 + len(word) > limit:
            break
        kept += "-" + word
    return kept


def next_name(out: Path, seed: str, scenario: str) -> str:
    """`<seed>-synth-<k>-<scenario>`, with k one past the highest already in `out`."""
    taken = [
        int(m.group(1))
        for p in out.glob(f"{seed}-synth-*")
        if (m := re.match(rf"{re.escape(seed)}-synth-(\d+)", p.name))
    ]
    return f"{seed}-synth-{max(taken, default=0) + 1:02d}-{slug(scenario)}"


def task_toml(
    name: str,
    spec: TaskSpecDraft,
    seed: SeedFacts,
    seed_spec: TaskSpec,
    thresholds: dict[str, float],
    baseline_score: float,
) -> str:
    limits = seed_spec.limits
    data: dict[str, Any] = {
        "contract": GENERATED_CONTRACT,
        "name": name,
        "title": spec.title,
        "modality": seed.modality,
        "task_type": seed.task_type,
        "source": f"synthetic (SandMLE) from seed task {seed.name}: {spec.scenario}",
        "read_only": ["train.csv", "test.csv"],
        "metric": {"name": seed.metric, "higher_is_better": seed.higher_is_better},
        "submission": {"file": "submission.csv", "columns": [spec.target], "id_column": "id"},
        "baseline": {"command": "python train.py", "score": round(baseline_score, 6)},
        "thresholds": {lvl: thresholds[lvl] for lvl in LEVELS},
        "limits": {
            "exec_timeout_s": min(limits.exec_timeout_s, MAX_EXEC_TIMEOUT_S),
            "mem_mb": limits.mem_mb,
            "max_steps": limits.max_steps,
        },
        "validate": {"mode": seed_spec.validate_.mode},
    }
    text = dumps_toml(data)
    TaskSpec.model_validate(data)  # the same strict model that will read it back
    return text


def dumps_toml(data: dict[str, Any]) -> str:
    """TOML for a two-level mapping of scalars and lists (all task.toml needs)."""
    top = [f"{k} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    tables = [
        f"\n[{k}]\n" + "\n".join(f"{kk} = {_value(vv)}" for kk, vv in v.items())
        for k, v in data.items()
        if isinstance(v, dict)
    ]
    return "\n".join(top) + "\n" + "\n".join(tables) + "\n"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def write_task(
    folder: Path,
    toml_text: str,
    dev: DeveloperAnswer,
    grader: GraderAnswer,
    writer: WriterAnswer,
) -> None:
    (folder / "env").mkdir(parents=True)
    (folder / "private" / "reference").mkdir(parents=True)
    (folder / "task.toml").write_text(toml_text)
    (folder / "description.md").write_text(writer.description_md.rstrip() + "\n")
    (folder / "prepare.py").write_text(dev.prepare_py)
    (folder / "env" / "train.py").write_text(dev.train_py)
    (folder / "private" / "grade.py").write_text(grader.grade_py)
    for lvl in LEVELS:
        (folder / "private" / "reference" / f"{lvl}.py").write_text(getattr(dev.references, lvl))
