"""`mlagent tasks check`: does a task folder keep the contract end to end?"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from ..sandbox import make_executor
from .result import GradeResult
from .spec import Task, TaskError


class Check(BaseModel):
    name: str
    ok: bool
    detail: str = ""


class TaskReport(BaseModel):
    task: str
    ok: bool = True
    checks: list[Check] = Field(default_factory=list)
    seconds: float = 0.0

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name=name, ok=ok, detail=detail))
        self.ok = self.ok and ok


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def check_task(
    task: Task, sandbox: str = "local", log: Callable[[str], None] | None = None
) -> TaskReport:
    report = TaskReport(task=task.name)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"mlagent-check-{task.name}-") as tmp:
        base = Path(tmp)
        try:
            _check_all(task, base, sandbox, report, log or (lambda _: None))
        except TaskError as exc:
            report.add("prepare", False, str(exc))
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def _check_all(
    task: Task, base: Path, sandbox: str, report: TaskReport, log: Callable[[str], None]
) -> None:
    spec = task.spec
    ws1, pv1, ws2, pv2 = (base / n for n in ("ws1", "pv1", "ws2", "pv2"))
    log(f"{task.name}: preparing twice")
    task.prepare(ws1, pv1)
    task.prepare(ws2, pv2)
    same = tree_hashes(ws1) == tree_hashes(ws2) and tree_hashes(pv1) == tree_hashes(pv2)
    report.add("prepare is deterministic", same, "" if same else "file hashes differ between runs")
    shutil.rmtree(ws2)
    pristine = base / "pristine"
    shutil.copytree(ws1, pristine, symlinks=True)

    report.add("thresholds strictly ordered", True, str(spec.thresholds.model_dump()))
    _check_isolation(task, ws1, pv1, sandbox, report)

    log(f"{task.name}: baseline")
    executor = make_executor(sandbox, workspace=ws1, mem_mb=spec.limits.mem_mb)
    try:
        res = executor.run(
            spec.baseline.command,
            cwd=ws1,
            timeout_s=spec.limits.exec_timeout_s,
            mem_mb=spec.limits.mem_mb,
        )
    finally:
        executor.close()
    grade, each = _median_grade(task, ws1, pv1, sandbox)
    if not res.ok or not grade.valid or grade.score is None:
        detail = grade.error or f"exit {res.exit_code}: {res.output[-500:]}"
        report.add("baseline runs and scores", False, detail)
    else:
        expected = spec.baseline.score
        rel = abs(grade.score - expected) / max(abs(expected), 1e-9)
        tolerance = spec.baseline.tolerance
        report.add(
            f"baseline within {tolerance:.0%} of baseline.score",
            rel <= tolerance,
            f"scored {grade.score:.4g}{each}, task.toml says {expected:.4g} ({rel:.1%} off)",
        )

    if (pristine / "sample_submission.csv").is_file() and spec.submission.file.endswith(".csv"):
        shutil.copy(pristine / "sample_submission.csv", ws1 / spec.submission.file)
        g = task.grade(ws1, pv1, "test", sandbox=sandbox)
        worse = (
            g.valid and g.score is not None and not task.reaches(g.score, spec.thresholds.median)
        )
        report.add(
            "sample submission valid and below median",
            worse,
            f"valid={g.valid} score={g.score} error={g.error}",
        )

    for level, ref in task.references().items():
        log(f"{task.name}: reference {level}")
        ws = base / f"ref-{level}"
        shutil.copytree(pristine, ws, symlinks=True)
        shutil.copy(ref, ws / f"_reference_{level}.py")
        executor = make_executor(sandbox, workspace=ws, mem_mb=spec.limits.mem_mb)
        try:
            res = executor.run(
                f"python _reference_{level}.py",
                cwd=ws,
                timeout_s=spec.limits.exec_timeout_s,
                mem_mb=spec.limits.mem_mb,
            )
        finally:
            executor.close()
        g, each = _median_grade(task, ws, pv1, sandbox)
        threshold = getattr(spec.thresholds, level)
        ok = res.ok and g.valid and g.score is not None and task.reaches(g.score, threshold)
        detail = (
            f"scored {g.score:.4g}{each} vs {level} {threshold}"
            if g.valid
            else (g.error or res.output[-500:])
        )
        if not res.ok:  # say why the run failed: a time-out on a busy machine reads differently
            why = res.killed_reason or ("timed out" if res.timed_out else "")
            detail = f"run: exit {res.exit_code} {why} after {res.duration_s:.1f}s; {detail}"
        report.add(f"reference {level} reaches its threshold", ok, detail)
    if not task.references():
        report.add("has reference solutions", False, "private/reference/ holds no level script")


PROBE = """
import os, sys
targets = sys.argv[1:]
seen = [t for t in targets if os.path.exists(t)]
print("VISIBLE:" + "|".join(seen))
"""


def _median_grade(task: Task, ws: Path, pv: Path, sandbox: str) -> tuple[GradeResult, str]:
    """Grade `ws` on the test split; a timed metric (`baseline.grades` > 1) is graded that often
    and scored by the median, since one timing on a shared machine can be a quarter off. Returns
    the grade and, for a median, the scores it was taken of (to show)."""
    grade = task.grade(ws, pv, "test", sandbox=sandbox)
    if task.spec.baseline.grades == 1 or not grade.valid or grade.score is None:
        return grade, ""
    scores = [grade.score]
    for _ in range(task.spec.baseline.grades - 1):
        again = task.grade(ws, pv, "test", sandbox=sandbox)
        if not again.valid or again.score is None:  # a grader that is only sometimes valid
            return again, ""
        scores.append(again.score)
    median = statistics.median(scores)
    each = f" (median of {', '.join(f'{x:.4g}' for x in scores)})"
    return grade.model_copy(update={"score": median}), each


def _check_isolation(task: Task, ws: Path, private: Path, sandbox: str, report: TaskReport) -> None:
    """No private file inside the workspace, and none reachable from a command run in it."""
    private_names = {p.name for p in (task.folder / "private").rglob("*") if p.is_file()}
    leaked = [p for p in tree_hashes(ws) if Path(p).name in private_names]
    answers = {h for h in tree_hashes(private).values()}
    copied = [p for p, h in tree_hashes(ws).items() if h in answers]
    report.add(
        "no private file in the workspace",
        not leaked and not copied,
        f"found {leaked + copied}" if leaked or copied else "",
    )
    targets = [str(private), str(task.folder / "private" / "grade.py"), "../private"]
    targets += [str(p) for p in private.iterdir()][:3]
    (ws / "_probe.py").write_text(PROBE)
    executor = make_executor(sandbox, workspace=ws)
    try:
        res = executor.run(["python", "_probe.py", *targets], cwd=ws, timeout_s=30)
    finally:
        executor.close()
        (ws / "_probe.py").unlink(missing_ok=True)
    line = next((ln for ln in res.output.splitlines() if ln.startswith("VISIBLE:")), None)
    visible = [t for t in (line or "VISIBLE:")[8:].split("|") if t]
    ok = line is not None and not visible
    report.add(
        "no private file reachable from the sandbox",
        ok,
        f"visible: {visible}" if visible else ("" if line else res.output[-300:]),
    )
