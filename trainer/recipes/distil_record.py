"""The per-round record of a distil run: what each round searched, found and trained on.

It lives in the recipe's state (so a checkpoint carries it and `--resume` goes on after the last
finished round) and beside the checkpoints as `distil.json`, for people and benchmarks to read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mlagent_tui.core.atomic import write_atomic

RECORD_FILE = "distil.json"


class RoundRecord(BaseModel):
    """What one round (round 0: the stored sessions alone) found and trained on."""

    round: int
    seed: int | None = None  # the round's search seed (None: no search)
    sessions: list[str] = Field(default_factory=list)
    nodes_searched: int = 0
    improvements_found: int = 0
    items: int = 0  # distilled items trained on in this round (everything found so far)
    bases: dict[str, int] = Field(default_factory=dict)  # hidden | search | valid
    anchor_only: bool = False
    swept: int = 0  # sweep sessions run before this round (round 1 only)
    sweep: dict[str, str] = Field(default_factory=dict)  # task -> the choice taught, or why not
    held_out: dict[str, Any] | None = None  # the round's starting policy's figures, if asked


def write_record(out_dir: Path, rounds: list[RoundRecord]) -> Path:
    """The per-round record beside the checkpoints (`distil.json`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"rounds": [r.model_dump() for r in rounds]}, indent=2) + "\n"
    return write_atomic(out_dir / RECORD_FILE, body)
