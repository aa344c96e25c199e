"""Which tasks and seeds a model was trained on (placeholder until the full module lands)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

FILE = "training_data.json"


class ProvenanceError(ValueError):
    """No readable training-data record where one was expected."""


class TrainingData(BaseModel):
    tasks: dict[str, list[int]] = Field(default_factory=dict)
    runs: list[str] = Field(default_factory=list)

    def add(self, task: str, seed: int) -> None:
        self.tasks[task] = sorted({*self.tasks.get(task, []), int(seed)})

    def merge(self, other: TrainingData) -> TrainingData:
        out = self.model_copy(deep=True)
        for task, seeds in other.tasks.items():
            for s in seeds:
                out.add(task, s)
        out.runs = sorted({*out.runs, *other.runs})
        return out

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{FILE}.tmp"
        tmp.write_text(self.model_dump_json(indent=2) + "\n")
        tmp.replace(folder / FILE)
        return folder / FILE

    @classmethod
    def load(cls, path: Path) -> TrainingData:
        path = Path(path)
        target = path / FILE if path.is_dir() else path
        try:
            return cls.model_validate(json.loads(target.read_text()))
        except (OSError, ValueError) as exc:
            raise ProvenanceError(f"no training-data record at {target}: {exc}") from None
