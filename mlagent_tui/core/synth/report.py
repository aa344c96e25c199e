"""The yield report of a synth run: per candidate how far it got and why it stopped."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .execution import Attempt

STAGES = ("specified", "data", "grader", "kept")
Stage = Literal["none", "specified", "data", "grader", "kept"]


def clip(text: str, limit: int) -> str:
    """One line of at most `limit` characters, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 3].rsplit(" ", 1)[0] if " " in flat[: limit - 3] else flat[: limit - 3]
    return cut + "..."


class RoleLog(BaseModel):
    """What one role did for one candidate: model calls, JSON errors, executed attempts."""

    calls: int = 0
    json_errors: list[str] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)


class CandidateReport(BaseModel):
    index: int
    stage: Stage = "none"  # the last stage it passed
    kept: bool = False
    name: str | None = None
    scenario: str | None = None
    folder: str | None = None
    reason: str | None = None  # why it was discarded
    roles: dict[str, RoleLog] = Field(default_factory=dict)
    thresholds: dict[str, float] | None = None
    baseline_score: float | None = None
    seconds: float = 0.0

    def role(self, name: str) -> RoleLog:
        return self.roles.setdefault(name, RoleLog())


class SynthReport(BaseModel):
    seed: str
    model: str
    requested: int
    out: str
    candidates: list[CandidateReport] = Field(default_factory=list)
    stopped: str | None = None  # set when the run ended early (e.g. the model ran out)
    seconds: float = 0.0

    @property
    def yield_counts(self) -> dict[str, int]:
        order = ("none", *STAGES)
        return {
            stage: sum(order.index(c.stage) >= order.index(stage) for c in self.candidates)
            for stage in STAGES
        }

    def as_json(self) -> dict:
        return {**self.model_dump(), "yield": self.yield_counts}

    def text(self) -> str:
        y = self.yield_counts
        n = len(self.candidates)
        lines = [
            f"synth from {self.seed} with {self.model}: {n} candidate(s) of {self.requested}",
            "yield: "
            + " -> ".join(f"{s} {y[s]}/{n}" for s in STAGES)
            + f"  ({self.seconds:.1f} s)",
        ]
        for c in self.candidates:
            head = f"  #{c.index} {c.scenario or '(no spec)'}"
            if c.kept:
                lines.append(f"{head}: kept as {c.folder}")
            else:
                when = "" if c.stage == "none" else f" after {c.stage}"
                lines.append(f"{head}: discarded{when}: {c.reason}")
            for role, log in c.roles.items():
                failed = [a.kind for a in log.attempts if not a.ok]
                extra = f", failed attempts {failed}" if failed else ""
                bad = f", invalid JSON x{len(log.json_errors)}" if log.json_errors else ""
                lines.append(f"      {role}: {log.calls} call(s){bad}{extra}")
                if log.json_errors:  # why, even when the model failed right after
                    lines.append(f"        rejected: {clip(log.json_errors[-1], 160)}")
        if self.stopped:
            lines.append(f"stopped early: {self.stopped}")
        return "\n".join(lines)
