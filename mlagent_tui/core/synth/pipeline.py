"""One synth run: for each candidate, the four roles in turn, the executed stages, then the gate.

Strategist -> spec (specified) -> Developer, prepare.py run in the sandbox (data) -> MLOps,
grade.py run in the sandbox (grader) -> Writer, leak check (numbers, then the model's judge)
-> `check_task` (kept).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from ..llm import ChatModel, ModelError
from ..tasks import Task, TaskError, check_task
from .answers import Conversation, schema_hint
from .checks import description_problems, leak_problem, spec_problems, spec_threshold_problem
from .execution import Attempt, SandboxRunner
from .judge import judge_leak
from .report import CandidateReport, SynthReport
from .roles import (
    DEVELOPER,
    MLOPS,
    STRATEGIST,
    WRITER,
    DeveloperAnswer,
    GraderAnswer,
    StrategistAnswer,
    WriterAnswer,
)
from .seed import SeedFacts, describe_seed, seed_prompt
from .stages import Discard, PreparedData, RoleFailure, run_data_stage, run_grader_stage
from .taskfolder import next_name, task_toml, write_task

Log = Callable[[str], None]


class SynthConfig(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    n: int = Field(default=1, ge=1, le=1000)
    out: Path
    exec_timeout_s: float = Field(default=60.0, gt=0)  # each generated script, in the sandbox
    mem_mb: int = Field(default=1024, gt=0)
    sandbox: str = "local"
    temperature: float = 0.7
    developer_attempts: int = Field(default=5, ge=1)
    grader_attempts: int = Field(default=3, ge=1)
    judge_leaks: bool = True  # ask the model too, on top of the number check (judge.py)


def synthesize(
    seed_task: Task, model: ChatModel, config: SynthConfig, log: Log | None = None
) -> SynthReport:
    """Grow up to `config.n` tasks from `seed_task`; every candidate is reported, kept or not."""
    say = log or (lambda _: None)
    started = time.perf_counter()
    say(f"reading seed task {seed_task.name}")
    facts = describe_seed(seed_task)
    config.out.mkdir(parents=True, exist_ok=True)
    report = SynthReport(
        seed=seed_task.name, model=model.name, requested=config.n, out=str(config.out)
    )
    runner = SandboxRunner(config.sandbox, config.exec_timeout_s, config.mem_mb)
    for index in range(1, config.n + 1):
        cand = CandidateReport(index=index)
        report.candidates.append(cand)
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="mlagent-synth-") as tmp:
            try:
                Candidate(seed_task, facts, model, config, runner, cand, report, say).run(Path(tmp))
            except ModelError as exc:  # out of replay answers, API down for good: stop the run
                cand.reason = f"model error: {exc}"
                report.stopped = str(exc)
            except Discard as exc:
                cand.reason = str(exc)
            except Exception as exc:  # noqa: BLE001 - a bug of ours: keep the report, stop
                cand.reason = f"internal error: {type(exc).__name__}: {exc}"
                report.stopped = cand.reason
        cand.seconds = round(time.perf_counter() - t0, 2)
        verdict = f"kept as {cand.name}" if cand.kept else f"discarded: {cand.reason}"
        say(f"candidate {index}: {verdict}")
        if report.stopped:
            break
    report.seconds = round(time.perf_counter() - started, 2)
    return report


class Candidate:
    """One candidate task through the four roles; raises Discard with the reason."""

    def __init__(
        self,
        seed_task: Task,
        facts: SeedFacts,
        model: ChatModel,
        config: SynthConfig,
        runner: SandboxRunner,
        cand: CandidateReport,
        report: SynthReport,
        say: Log,
    ) -> None:
        self.seed_task, self.facts, self.model, self.config = seed_task, facts, model, config
        self.runner, self.cand, self.report, self.say = runner, cand, report, say

    def chat(self, role: str, system: str) -> Conversation:
        log = self.cand.role(role)
        return Conversation(
            self.model,
            system,
            temperature=self.config.temperature,
            on_call=lambda: setattr(log, "calls", log.calls + 1),
            on_reject=log.json_errors.append,
        )

    def run(self, scratch: Path) -> None:
        strategy = self.strategist()
        spec = strategy.spec
        self.cand.scenario = spec.scenario
        problem = spec_threshold_problem(spec)
        if problem:
            raise Discard(f"specification: {problem}")
        self.cand.stage = "specified"
        dev, data = self.developer(strategy, scratch)
        self.cand.thresholds = data.thresholds
        self.cand.stage = "data"
        grader, baseline = self.mlops(strategy, data, scratch)
        self.cand.baseline_score = baseline
        self.cand.stage = "grader"
        writer = self.writer(strategy, data)
        self.keep(strategy, dev, grader, writer, data, baseline, scratch)

    # -- 1. Data Strategist ---------------------------------------------------------------
    def strategist(self) -> StrategistAnswer:
        self.say(f"candidate {self.cand.index}: Data Strategist")
        used = [c.scenario for c in self.report.candidates if c.scenario]
        avoid = f"\nScenarios already used (choose another): {used}" if used else ""
        prompt = (
            f"{seed_prompt(self.facts)}\n{avoid}\n\nJSON schema of your answer:\n"
            f"{schema_hint(StrategistAnswer)}"
        )
        chat = self.chat("strategist", STRATEGIST)
        answer, errors = chat.ask(
            prompt, StrategistAnswer, check=lambda a: spec_problems(a, self.facts)
        )
        if answer is None:
            raise Discard(
                f"Data Strategist gave no valid answer in {len(errors)} tries: {errors[-1][:300]}"
            )
        return answer

    # -- 2. MLE Developer -----------------------------------------------------------------
    def developer(
        self, strategy: StrategistAnswer, scratch: Path
    ) -> tuple[DeveloperAnswer, PreparedData]:
        spec = strategy.spec
        chat = self.chat("developer", DEVELOPER)
        log = self.cand.role("developer")
        prompt = (
            f"Specification:\n{spec.model_dump_json(indent=1)}\n\nMutation boosters: "
            f"{[m.model_dump() for m in strategy.mutations]}\nMetric: {self.facts.metric} "
            f"({'higher' if spec.higher_is_better else 'lower'} is better). Target column: "
            f"{spec.target}; id column: id.\n\nJSON schema of your answer:\n"
            f"{schema_hint(DeveloperAnswer)}"
        )
        return self._repair(
            "MLE Developer",
            "prepare.py",
            (chat, log, prompt, DeveloperAnswer),
            self.config.developer_attempts,
            lambda answer: run_data_stage(answer, spec, self.runner, scratch),
        )

    # -- 3. MLOps Engineer ----------------------------------------------------------------
    def mlops(
        self, strategy: StrategistAnswer, data: PreparedData, scratch: Path
    ) -> tuple[GraderAnswer, float]:
        spec = strategy.spec
        chat = self.chat("mlops", MLOPS)
        log = self.cand.role("mlops")
        head = pd.read_csv(data.private / "test.csv").head(3).to_csv(index=False)
        prompt = (
            f"Task: {spec.title}. Metric: {self.facts.metric} "
            f"({'higher' if spec.higher_is_better else 'lower'} is better), computed on the "
            f"column {spec.target!r}; id column 'id'. Target values: {spec.target_values}.\n"
            f"Answers (<answers>/validate.csv and <answers>/test.csv) look like:\n{head}\n"
            f"Thresholds: {data.thresholds}.\n\nJSON schema of your answer:\n"
            f"{schema_hint(GraderAnswer)}"
        )
        return self._repair(
            "MLOps Engineer",
            "grade.py",
            (chat, log, prompt, GraderAnswer),
            self.config.grader_attempts,
            lambda answer: run_grader_stage(answer, spec, data, self.runner, scratch),
        )

    def _repair(
        self, title: str, script: str, ask: tuple, attempts: int, stage: Callable[[Any], Any]
    ) -> tuple[Any, Any]:
        """Ask a role, run its code; a failure goes back to it with the error, `attempts` times."""
        chat, log, prompt, schema = ask
        for attempt in range(1, attempts + 1):
            self.say(f"candidate {self.cand.index}: {title}, attempt {attempt}")
            answer, errors = chat.ask(prompt, schema)
            if answer is None:
                raise Discard(f"{title} gave no valid JSON in {len(errors)} tries")
            try:
                result = stage(answer)
            except RoleFailure as exc:
                log.attempts.append(exc.attempt)
                prompt = _retry(exc.attempt)
                continue
            log.attempts.append(Attempt(ok=True))
            return answer, result
        last = log.attempts[-1]
        raise Discard(
            f"{script} still failing after {attempts} attempts ({last.kind}): {last.detail[:300]}"
        )

    # -- 4. Technical Writer --------------------------------------------------------------
    def writer(self, strategy: StrategistAnswer, data: PreparedData) -> WriterAnswer:
        self.say(f"candidate {self.cand.index}: Technical Writer")
        spec = strategy.spec
        train = pd.read_csv(data.public / "train.csv")
        test = pd.read_csv(data.public / "test.csv")
        public_spec = spec.model_dump(include={"title", "scenario", "features", "target"})
        prompt = (
            f"The seed task's description (match its voice and layout):\n\n"
            f"{self.facts.description}\n\n---\nThe new task: {json.dumps(public_spec)}\n"
            f"Target values: {spec.target_values}. train.csv: {len(train)} rows with the "
            f"target; test.csv: {len(test)} rows without it (half for validate, half for "
            f"submit). Metric: {self.facts.metric}, "
            f"{'higher' if spec.higher_is_better else 'lower'} is better. Baseline train.py: "
            f"the simple model ({spec.thresholds.bronze.method}).\n\nJSON schema of your "
            f"answer:\n{schema_hint(WriterAnswer)}"
        )
        chat = self.chat("writer", WRITER)
        answer, errors = chat.ask(
            prompt, WriterAnswer, check=lambda a: description_problems(a, spec, self.facts)
        )
        if answer is None:
            raise Discard(
                f"Technical Writer gave no valid answer in {len(errors)} tries: {errors[-1][:300]}"
            )
        halves = [pd.read_csv(data.private / n) for n in ("validate.csv", "test.csv")]
        sizes = [len(train), len(test), len(train) + len(test), *map(len, halves)]
        leak = leak_problem(answer.description_md, spec, pd.concat(halves), sizes=sizes)
        if not leak and self.config.judge_leaks:
            self.say(f"candidate {self.cand.index}: leak judge")
            leak = judge_leak(self.model, answer.description_md, spec, log=self.cand.role("judge"))
        if leak:
            raise Discard(f"description leaks: {leak}")
        return answer

    # -- the gate -------------------------------------------------------------------------
    def keep(
        self,
        strategy: StrategistAnswer,
        dev: DeveloperAnswer,
        grader: GraderAnswer,
        writer: WriterAnswer,
        data: PreparedData,
        baseline: float,
        scratch: Path,
    ) -> None:
        """Assemble the folder in scratch space (a crash leaves nothing half-made in --out),
        run the gate, and move it into --out only when it passes."""
        out = self.config.out
        name = next_name(out, self.facts.name, strategy.spec.scenario)
        toml_text = task_toml(
            name, strategy.spec, self.facts, self.seed_task.spec, data.thresholds, baseline
        )
        staging = scratch / "task" / name
        shutil.rmtree(staging, ignore_errors=True)
        write_task(staging, toml_text, dev, grader, writer)
        self.say(f"candidate {self.cand.index}: mlagent tasks check")
        try:
            result = check_task(Task(staging), sandbox=self.config.sandbox)
        except TaskError as exc:
            raise Discard(f"tasks check: {exc}") from exc
        if not result.ok:
            failed = [f"{c.name} ({c.detail})" for c in result.checks if not c.ok]
            raise Discard("tasks check failed: " + "; ".join(failed)[:600])
        shutil.move(staging, out / name)
        self.cand.name, self.cand.folder = name, str(out / name)
        self.cand.stage, self.cand.kept = "kept", True


def _retry(attempt: Attempt) -> str:
    return (
        f"Running your code failed ({attempt.kind}):\n{attempt.detail}\n\n"
        "Fix it and answer again with the complete JSON object (every field)."
    )
