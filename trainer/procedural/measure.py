"""Measuring a generated task: prepare it with seed 0, run the starter and the four references,
grade each on the test split with the task's own grade.py.

Importing pandas and scikit-learn costs seconds on a busy CPU, far more than the scripts
themselves, so one warm worker process (`python -m trainer.procedural.measure`) runs every
task of a batch in turn: one JSON request per line in, one JSON reply per line out. The
scripts are the generator's own code (trusted, like a bundled task's), never an agent's.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

PACKAGE_PARENT = Path(__file__).resolve().parents[2]
SCRIPTS = ("baseline", "median", "bronze", "silver", "gold")


class Measurement(BaseModel):
    """Test-split scores (None: the script failed or its submission was invalid)."""

    scores: dict[str, float | None] = Field(default_factory=dict)  # + "sample"
    errors: dict[str, str] = Field(default_factory=dict)
    seconds: dict[str, float] = Field(default_factory=dict)
    test_rows: int = 0
    test_ids: list[int] = Field(default_factory=list)  # the first few, for the description


class MeasureError(RuntimeError):
    """The worker died, hung or answered nonsense."""


def _quiet(fn: Any, *args: Any) -> tuple[Any, str]:
    """Run fn with its prints captured; returns (result, output)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        result = fn(*args)
    return result, buf.getvalue()


def _run_script(path: Path, argv: list[str]) -> None:
    sys.argv = [str(path), *argv]
    runpy.run_path(str(path), run_name="__main__")


def measure_folder(folder: Path, scratch: Path) -> Measurement:
    """Prepare `folder` with seed 0 in `scratch`, run its scripts, grade them (in this process)."""
    import pandas as pd

    shutil.rmtree(scratch, ignore_errors=True)
    public, private, subs = scratch / "public", scratch / "private", scratch / "subs"
    for p in (public, private, subs):
        p.mkdir(parents=True)
    m = Measurement()
    home, argv = os.getcwd(), list(sys.argv)
    try:
        _quiet(
            _run_script,
            folder / "prepare.py",
            ["--public", str(public), "--private", str(private), "--seed", "0"],
        )
        shutil.copy(folder / "env" / "train.py", public / "train.py")
        test = pd.read_csv(public / "test.csv")
        m.test_rows, m.test_ids = len(test), [int(i) for i in test["id"].iloc[:2]]
        shutil.copy(public / "sample_submission.csv", subs / "sample.csv")
        for label in SCRIPTS:
            script = (
                public / "train.py"
                if label == "baseline"
                else folder / "private" / "reference" / f"{label}.py"
            )
            (public / "submission.csv").unlink(missing_ok=True)
            started = time.perf_counter()
            os.chdir(public)
            try:
                _, out = _quiet(_run_script, script, [])
            except BaseException:  # noqa: BLE001 - a failing script is a finding, not a crash
                m.errors[label] = traceback.format_exc()[-1500:]
            finally:
                os.chdir(home)
            m.seconds[label] = round(time.perf_counter() - started, 3)
            if (public / "submission.csv").is_file():
                shutil.move(public / "submission.csv", subs / f"{label}.csv")
        grade = runpy.run_path(str(folder / "private" / "grade.py"), run_name="procedural_grade")
        for label in ("sample", *SCRIPTS):
            sub = subs / f"{label}.csv"
            if not sub.is_file():
                m.scores[label] = None
                m.errors.setdefault(label, "wrote no submission.csv")
                continue
            try:
                m.scores[label], _ = _quiet(grade["grade"], sub, private, "test")
                m.scores[label] = float(m.scores[label])
            except Exception as exc:  # noqa: BLE001 - an invalid submission is a finding
                m.scores[label] = None
                m.errors[label] = f"{type(exc).__name__}: {exc}"
    finally:
        sys.argv = argv
        os.chdir(home)
    return m


def serve() -> None:
    """The worker's loop: {"folder", "scratch"} per line in, a Measurement per line out."""
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray writes to fd 1 (C libraries) must not corrupt the replies
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            m = measure_folder(Path(job["folder"]), Path(job["scratch"]))
            reply.write(json.dumps({"ok": True, "measurement": m.model_dump()}) + "\n")
        except Exception:  # noqa: BLE001 - report, keep serving
            reply.write(json.dumps({"ok": False, "error": traceback.format_exc()[-2000:]}) + "\n")
        reply.flush()


class MeasureWorker:
    """The parent's handle on one warm worker process."""

    def __init__(self, timeout_s: float = 300.0) -> None:
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.stderr: Any = None  # a temporary file: what the worker said before it died

    def __enter__(self) -> MeasureWorker:
        self.stderr = tempfile.TemporaryFile()
        paths = [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH", "")]
        env = {
            **os.environ,
            "OMP_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trainer.procedural.measure"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env=env,
            start_new_session=True,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

    def measure(self, folder: Path, scratch: Path) -> Measurement:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise MeasureError("the measuring worker is not running")
        try:
            proc.stdin.write(json.dumps({"folder": str(folder), "scratch": str(scratch)}) + "\n")
            proc.stdin.flush()
        except OSError as exc:
            raise MeasureError(f"the measuring worker is gone: {exc}") from exc
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout_s)
        line = proc.stdout.readline() if ready else ""
        if not line:
            proc.kill()
            proc.wait()
            why = "died" if ready else f"gave no answer in {self.timeout_s:.0f} s"
            self.stderr.seek(0)
            said = self.stderr.read().decode(errors="replace").strip()[-1500:]
            self.close()
            raise MeasureError(f"the measuring worker {why} on {folder.name}\n{said}".strip())
        answer = json.loads(line)
        if not answer.get("ok"):
            raise MeasureError(f"measuring {folder.name} failed:\n{answer.get('error')}")
        return Measurement.model_validate(answer["measurement"])


if __name__ == "__main__":
    serve()
