"""Which tasks and seeds a model was trained on: the record `mlagent-train eval` checks.

A training run writes `training_data.json` into its run folder; an exported GGUF carries it as
the sidecar `<file>.training.json`; the shipped adapter's card.json holds it under
`training_data`. Evaluation reads it so that a task (or a seed) a model learnt from is never
reported as held out. A record that should be there but cannot be read is an error, never an
empty record: an empty one would call every training task held out.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from mlagent_tui.core.atomic import write_atomic

FILE = "training_data.json"
SIDECAR_SUFFIX = ".training.json"
CHECKPOINTS = "checkpoints"  # a run folder's checkpoints live in <run>/checkpoints/<name>/


HELD_OUT_RULE = (
    "a task any training data came from (--trained-on, else the model's own record) is refused "
    "unless named in --tasks with --seeds all different from its training seeds"
)


class ProvenanceError(ValueError):
    """No readable training-data record where one was expected (the message names the file)."""


class NotHeldOut(ProvenanceError):
    """An evaluation task (or seed) the model was trained on: the held-out rule refuses it."""


class TrainingData(BaseModel):
    """task name -> the sorted distinct seeds any training session or rollout used, and the
    training runs (or other sources) the record came from."""

    tasks: dict[str, list[int]] = Field(default_factory=dict)
    runs: list[str] = Field(default_factory=list)

    @field_validator("tasks")
    @classmethod
    def _sorted_distinct(cls, tasks: dict[str, list[int]]) -> dict[str, list[int]]:
        return {name: sorted(set(seeds)) for name, seeds in tasks.items()}

    def add(self, task: str, seed: int) -> None:
        self.tasks[task] = sorted({*self.tasks.get(task, []), int(seed)})

    def merge(self, other: TrainingData) -> TrainingData:
        """Both records in one (a run started with --init learnt from its init run too)."""
        out = self.model_copy(deep=True)
        for task, seeds in other.tasks.items():
            out.tasks[task] = sorted({*out.tasks.get(task, []), *seeds})
        out.runs = sorted({*out.runs, *other.runs})
        return out

    def save(self, folder: Path) -> Path:
        """Write folder/training_data.json atomically (a reader sees the old record or the new)."""
        return self._write(Path(folder) / FILE)

    def save_sidecar(self, model_file: Path) -> Path:
        """Write the record beside an exported GGUF (`<file>.training.json`)."""
        return self._write(sidecar_of(Path(model_file)))

    def _write(self, target: Path) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        return write_atomic(target, self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> TrainingData:
        """The record of a run folder (or one of its checkpoint folders), a .json file (a
        record, or a model card holding one under `training_data`), or a GGUF (its sidecar)."""
        return cls.read(record_path(path))

    @classmethod
    def read(cls, file: Path) -> TrainingData:
        """Exactly this JSON file; anything unreadable is a ProvenanceError naming it."""
        try:
            raw = json.loads(Path(file).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ProvenanceError(f"no training-data record at {file}") from None
        except (OSError, ValueError) as exc:
            raise ProvenanceError(f"{file}: unreadable training-data record ({exc})") from None
        if isinstance(raw, dict) and isinstance(raw.get("training_data"), dict):
            raw = raw["training_data"]  # a model card
        if not isinstance(raw, dict) or "tasks" not in raw:
            raise ProvenanceError(f"{file}: not a training-data record (no 'tasks')")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            why = "; ".join(e["msg"] for e in exc.errors()[:3])
            raise ProvenanceError(f"{file}: not a training-data record ({why})") from None


def sidecar_of(model_file: Path) -> Path:
    """Where an exported model file keeps its record: `<file>.training.json`."""
    return Path(f"{model_file}{SIDECAR_SUFFIX}")


def record_path(path: Path) -> Path:
    """The JSON file a --trained-on PATH means (see TrainingData.load)."""
    path = Path(path)
    if path.is_dir():
        here = path / FILE
        if here.is_file():
            return here
        up = path.parent.parent if path.parent.name == CHECKPOINTS else path.parent
        if (up / FILE).is_file():
            return up / FILE
        raise ProvenanceError(f"no {FILE} in {path} (nor in its run folder {up})")
    if path.suffix.lower() == ".json":
        return path
    if path.exists() or path.suffix.lower() == ".gguf":
        side = sidecar_of(path)
        if not side.is_file():
            raise ProvenanceError(f"no training-data record beside {path} (expected {side})")
        return side
    raise ProvenanceError(f"no training-data record at {path}: no such file or folder")


def model_training_record(model: str) -> tuple[TrainingData, Path] | None:
    """What the model a `--model` string names learnt from of mlagent's tasks, and the file that
    says so; None where it saw no mlagent training data (a bare base, an API model, a GGUF
    without a sidecar, `local` with no shipped adapter)."""
    if model == "local":
        from mlagent_tui.core.llm.adapter import CARD_FILE, WEIGHTS_FILE, adapter_dir

        folder = adapter_dir()
        if folder is None or not (folder / WEIGHTS_FILE).is_file():
            return None  # no adapter: `local` is the bare base
        card = folder / CARD_FILE
        if not card.is_file():
            raise ProvenanceError(
                f"the shipped adapter in {folder} has no {CARD_FILE}: what it was trained on is "
                "unknown (pass --trained-on, or evaluate --model smollm2)"
            )
        return TrainingData.read(card), card
    if model.startswith("local:"):
        side = sidecar_of(Path(model.split(":", 1)[1]))
        return (TrainingData.read(side), side) if side.is_file() else None
    return None


def training_record(
    model: str, trained_on: Path | None = None
) -> tuple[TrainingData | None, str | None]:
    """The training data an evaluation of `model` is held out of, and the file it was read from:
    `trained_on` (see TrainingData.load) if given, else the model's own record (or none)."""
    if trained_on is not None:
        path = record_path(trained_on)
        return TrainingData.read(path), str(path)
    found = model_training_record(model)
    return (found[0], str(found[1])) if found else (None, None)


class HeldOutSeeds(BaseModel):
    trained_seeds: list[int]
    eval_seeds: list[int]


class HeldOut(BaseModel):
    """What an evaluation is held out of, for its report."""

    tasks: list[str] = Field(default_factory=list)  # never trained on
    held_out_seeds: dict[str, HeldOutSeeds] = Field(default_factory=dict)
    training_data: str | None = None  # the record checked; null where none is known


def held_out(
    tasks: list[str],
    named: set[str],
    seeds: list[int],
    data: TrainingData | None,
    source: str | None,
) -> HeldOut:
    """Apply HELD_OUT_RULE to the evaluation's task names (`named`: those asked for by name);
    a refusal is a NotHeldOut naming the task and the seeds it was trained on."""
    out = HeldOut(training_data=source)
    shown = ",".join(map(str, seeds))
    for task in tasks:
        trained = data.tasks.get(task) if data is not None else None
        if trained is None:
            out.tasks.append(task)
            continue
        said = ",".join(map(str, trained)) or "unknown"
        if task not in named:
            raise NotHeldOut(
                f"task {task} was trained on (seeds {said}, per {source}): it is evaluated only "
                f"when named in --tasks with --seeds other than {said}"
            )
        if not trained or set(seeds) & set(trained):
            raise NotHeldOut(
                f"task {task} was trained on seeds {said} (per {source}): --seeds {shown} must "
                "all differ from them"
            )
        out.held_out_seeds[task] = HeldOutSeeds(trained_seeds=trained, eval_seeds=seeds)
    return out


def training_data_of_model(model: str) -> TrainingData | None:
    """model_training_record without the file it came from."""
    found = model_training_record(model)
    return found[0] if found else None
