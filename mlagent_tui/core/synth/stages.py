"""The two executed stages: the developer's data (prepare.py, baseline, references) and the grader.

A `RoleFailure` goes back to the role that wrote the code; a `Discard` ends the candidate.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..tasks import tree_hashes
from .checks import data_problems, order_problem, round_threshold
from .execution import Attempt, SandboxRunner, driver_command, failure, install_grading
from .roles import LEVELS, DeveloperAnswer, GraderAnswer, TaskSpecDraft

THRESHOLD_TOLERANCE = 1e-3  # relative: a threshold is its reference method's measured score
PREPARE = "python prepare.py --public public --private private --seed 0"
GARBAGE: dict[str, bytes] = {
    "empty.csv": b"",
    "not_csv.csv": bytes(range(256)) * 4,
}


class RoleFailure(Exception):
    def __init__(self, attempt: Attempt) -> None:
        super().__init__(attempt.detail)
        self.attempt = attempt


class Discard(Exception):
    """The candidate cannot become a task; the message is the reason in the report."""


@dataclass
class PreparedData:
    public: Path
    private: Path
    thresholds: dict[str, float]
    submissions: dict[str, Path] = field(default_factory=dict)  # script -> its submission.csv
    seconds: dict[str, float] = field(default_factory=dict)


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _sections(output: str, marker: str) -> dict[str, list[str]]:
    """Split a driver script's output on `@@<marker> name` lines."""
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith(f"@@{marker} "):
            current = parts.setdefault(line.split(" ", 1)[1].strip(), [])
        elif current is not None:
            current.append(line)
    return parts


def run_data_stage(
    dev: DeveloperAnswer, spec: TaskSpecDraft, runner: SandboxRunner, scratch: Path
) -> PreparedData:
    """Run prepare.py twice (deterministic?), check its files, then the baseline and references."""
    root = _fresh(scratch / "prep")
    for run in ("a", "b"):
        (root / run / "public").mkdir(parents=True)
        (root / run / "private").mkdir()
        (root / run / "prepare.py").write_text(dev.prepare_py)
    # Both runs at once (two cores); each one's output and exit status land in files.
    both = " & ".join(
        f"(cd {run} && {PREPARE} > ../{run}.log 2>&1; echo $? > ../{run}.rc)" for run in "ab"
    )
    res = runner.run(root, f"{both} & wait")
    if res.timed_out or res.killed_reason:
        res.output = _read(root / "a.log") + res.output
        raise RoleFailure(failure(res, "prepare.py"))
    for run in "ab":
        rc = _read(root / f"{run}.rc").strip()
        if rc != "0":
            res.output, res.exit_code = _read(root / f"{run}.log"), int(rc) if rc else None
            raise RoleFailure(failure(res, "prepare.py"))
    a, b = root / "a", root / "b"
    output = _read(root / "a.log")
    for part in ("public", "private"):
        ha, hb = tree_hashes(a / part), tree_hashes(b / part)
        if ha != hb:
            differ = sorted(k for k in set(ha) | set(hb) if ha.get(k) != hb.get(k))
            raise RoleFailure(
                Attempt(
                    ok=False,
                    kind="nondeterministic",
                    detail=f"prepare.py is not deterministic: {part}/{differ[:5]} differ "
                    "between two runs with --seed 0 (seed every random generator)",
                )
            )
    problems = data_problems(a / "public", a / "private", spec)
    if problems:
        raise RoleFailure(Attempt(ok=False, kind="contract", detail="; ".join(problems)))
    raw = _thresholds(output)
    hib = spec.higher_is_better
    thresholds = {k: round_threshold(v, hib) for k, v in raw.items()}
    problem = order_problem(thresholds, hib)
    if problem:
        raise Discard(problem)
    data = PreparedData(public=a / "public", private=a / "private", thresholds=thresholds)
    _run_scripts(dev, spec, runner, scratch, data)
    return data


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


def _thresholds(output: str) -> dict[str, float]:
    lines = [ln for ln in output.splitlines() if ln.startswith("THRESHOLDS ")]
    problem = "prepare.py printed no line `THRESHOLDS {...}`"
    if lines:
        try:
            values = json.loads(lines[-1].split(" ", 1)[1])
            return {lvl: float(values[lvl]) for lvl in LEVELS}
        except (ValueError, KeyError, TypeError) as exc:
            problem = f"cannot read the THRESHOLDS line ({exc}): {lines[-1][:200]}"
    raise RoleFailure(Attempt(ok=False, kind="contract", detail=problem))


def _run_scripts(
    dev: DeveloperAnswer,
    spec: TaskSpecDraft,
    runner: SandboxRunner,
    scratch: Path,
    data: PreparedData,
) -> None:
    """The baseline and the four references, each in a copy of the public files."""
    scripts = {"train.py": dev.train_py} | {
        f"_reference_{lvl}.py": getattr(dev.references, lvl) for lvl in LEVELS
    }
    folder = _fresh(scratch / "scripts")
    shutil.copytree(data.public, folder, dirs_exist_ok=True)
    (folder / "out").mkdir()
    for name, code in scripts.items():
        (folder / name).write_text(code)
    command = driver_command(folder, "RUN", list(scripts))
    res = runner.run(folder, command, timeout_s=runner.timeout_s * len(scripts))
    if res.timed_out or res.killed_reason:
        raise RoleFailure(failure(res, "the baseline and reference scripts"))
    sections = _sections(res.output, "RUN")
    test_ids = set(pd.read_csv(data.public / "test.csv")["id"])
    for name in scripts:
        out = sections.get(name, [])
        exit_line = next((ln for ln in reversed(out) if ln.startswith("@@EXIT ")), "@@EXIT ?")
        tail = "\n".join(ln for ln in out if not ln.startswith("@@"))[-1200:]
        label = "train_py" if name == "train.py" else f"references.{name[11:-3]}"
        if exit_line != "@@EXIT 0":
            raise RoleFailure(
                Attempt(ok=False, kind="error", detail=f"{label} failed ({exit_line[2:]}):\n{tail}")
            )
        sub = folder / "out" / f"{name}.csv"
        if not sub.is_file():
            raise RoleFailure(
                Attempt(ok=False, kind="contract", detail=f"{label} wrote no submission.csv")
            )
        try:
            df = pd.read_csv(sub)
            ok = {"id", spec.target} <= set(df.columns) and test_ids <= set(df["id"])
        except Exception:  # noqa: BLE001 - unreadable is as bad as incomplete
            ok = False
        if not ok:
            raise RoleFailure(
                Attempt(
                    ok=False,
                    kind="contract",
                    detail=f"{label}'s submission.csv must have columns id, {spec.target} and "
                    "a row for every id of test.csv",
                )
            )
        data.submissions[name] = sub


# -- the grader ---------------------------------------------------------------------------
def _garbage(sample: pd.DataFrame, target: str) -> dict[str, bytes]:
    files = dict(GARBAGE)
    files["wrong_columns.csv"] = (
        sample.rename(columns={target: "prediction"}).to_csv(index=False).encode()
    )
    files["missing_ids.csv"] = sample.iloc[: len(sample) // 2].to_csv(index=False).encode()
    files["duplicate_ids.csv"] = pd.concat([sample, sample.iloc[:1]]).to_csv(index=False).encode()
    holes = sample.copy()
    holes[target] = holes[target].astype(object)
    holes.loc[holes.index[::2], target] = None
    files["missing_values.csv"] = holes.to_csv(index=False).encode()
    return files


def run_grader_stage(
    grader: GraderAnswer,
    spec: TaskSpecDraft,
    data: PreparedData,
    runner: SandboxRunner,
    scratch: Path,
) -> float:
    """Grade the sample, the answers, the baseline, the references and garbage; the baseline's
    test score comes back (it becomes task.toml's baseline.score)."""
    folder = _fresh(scratch / "grade")
    (folder / "private").mkdir()
    (folder / "private" / "grade.py").write_text(grader.grade_py)
    shutil.copytree(data.private, folder / "answers")
    install_grading(folder)
    subs = folder / "subs"
    subs.mkdir()
    sample = pd.read_csv(data.public / "sample_submission.csv")
    shutil.copy(data.public / "sample_submission.csv", subs / "sample.csv")
    answers = pd.concat([pd.read_csv(data.private / n) for n in ("validate.csv", "test.csv")])
    answers[["id", spec.target]].to_csv(subs / "perfect.csv", index=False)
    for name, path in data.submissions.items():
        shutil.copy(path, subs / ("baseline.csv" if name == "train.py" else f"{name[11:-3]}.csv"))
    garbage = _garbage(sample, spec.target)
    for name, content in garbage.items():
        (subs / f"garbage_{name}").write_bytes(content)
    jobs = [(f.name, "test") for f in sorted(subs.iterdir())] + [("sample.csv", "validate")]
    grading = [f"{name}:{split}" for name, split in jobs]
    command = driver_command(folder, "GRADE", grading, sandbox=runner.backend)
    # The grader imports mlagent_tui.taskkit from the copy install_grading put in the folder:
    # standard library, numpy and pandas only, so it runs in either backend.
    res = runner.run(folder, command, timeout_s=runner.timeout_s * 2)
    if res.timed_out or res.killed_reason:
        raise RoleFailure(failure(res, "grade.py"))
    results = {k: _grade_json(v) for k, v in _sections(res.output, "GRADE").items()}
    sections = _sections(res.output, "GRADE")
    problems: list[str] = []

    def tail(key: str) -> str:
        return "\n".join(sections.get(key, []))[-600:] or "(no output)"

    for key, result in results.items():
        name = key.split(":")[0]
        if result is None:
            problems.append(f"on {name} it printed no JSON result (did it crash?):\n{tail(key)}")
        elif name.startswith("garbage_") and result.get("valid"):
            problems.append(f"it accepted garbage ({name[8:]}) as valid: {result}")
        elif name.startswith("garbage_") and not result.get("error"):
            problems.append(f"on garbage ({name[8:]}) it gave no error message: {result}")
        elif not name.startswith("garbage_") and not _scored(result):
            problems.append(f"{name} ({key.split(':')[1]} split) must be valid: {result}")
    missing = [f"{n}:{s}" for n, s in jobs if f"{n}:{s}" not in results]
    if missing:
        problems.append(f"no result for {missing}: {res.output[-600:]}")
    if not problems:
        problems += _score_problems(results, spec, data.thresholds)
    if problems:
        detail = "grade.py does not keep the grader contract:\n- " + "\n- ".join(problems[:8])
        raise RoleFailure(Attempt(ok=False, kind="contract", detail=detail))
    scores = {k: float(v["score"]) for k, v in results.items() if v is not None and _scored(v)}
    unmeasured = []
    for lvl in LEVELS:
        threshold, score = data.thresholds[lvl], scores[f"{lvl}.csv:test"]
        if abs(score - threshold) > THRESHOLD_TOLERANCE * max(1.0, abs(threshold)):
            unmeasured.append(f"{lvl} {threshold:.6g} but its reference scores {score:.6g}")
    if unmeasured:
        raise Discard(
            "the thresholds are not the scores of their methods (prepare.py must measure them): "
            + "; ".join(unmeasured)
        )
    return scores["baseline.csv:test"]


def _score_problems(
    results: dict[str, dict | None], spec: TaskSpecDraft, thresholds: dict[str, float]
) -> list[str]:
    sign = 1 if spec.higher_is_better else -1
    reach = lambda score, t: sign * (score - t) >= 0  # noqa: E731
    problems = []
    perfect = results["perfect.csv:test"]["score"]  # type: ignore[index]
    if not reach(perfect, thresholds["gold"]):
        problems.append(
            f"the answers themselves score {perfect:.6g}, not reaching gold "
            f"{thresholds['gold']:.6g}: is {spec.metric} computed in the right direction?"
        )
    for lvl in LEVELS:
        got = results.get(f"{lvl}.csv:test")
        if got and not reach(got["score"], thresholds[lvl]):
            problems.append(
                f"reference {lvl} scores {got['score']:.6g} but prepare.py's {lvl} threshold is "
                f"{thresholds[lvl]:.6g}: is grade.py computing {spec.metric} like prepare.py?"
            )
    return problems


def _scored(result: dict) -> bool:
    return bool(result.get("valid")) and isinstance(result.get("score"), (int, float))


def _grade_json(lines: list[str]) -> dict | None:
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and "valid" in value:
                return value
    return None
