"""`mlagent bench` end to end on tiny tasks with replay models: report, store, plots, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlagent_tui.core.bench import (
    BenchError,
    BenchRunner,
    build_report,
    make_config,
    resolve_tasks,
    score_curves,
    start_bench,
)
from mlagent_tui.core.store import Store, bench_sessions, list_benches

from .agent_helpers import research, write_replay
from .conftest import ROOT, TINY, bwrap_ready
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

# Predicts 2x + 0.5 where the answer is 2x: MAE 0.5 (bronze; 50% better than the baseline 1.0).
SOLVE = (
    "import csv\n"
    "rows = list(csv.DictReader(open('test.csv')))\n"
    "with open('submission.csv', 'w') as fh:\n"
    "    fh.write('id,y\\n')\n"
    "    for r in rows:\n"
    "        fh.write(f\"{r['id']},{2 * int(r['x']) + 0.5}\\n\")\n"
)
GOOD = [
    research("Write File", {"file_name": "solve.py", "content": SOLVE}),
    research("Execute Script", {"script_name": "solve.py"}),
    research("Validate", {}),
    research("Final Answer", {"final_answer": "2x + 0.5"}),
]
# The baseline's own script, one response that does not parse, then the replay runs out.
BASE = [
    research("Execute Script", {"script_name": "train.py"}),
    "no action in this response",
    research("Validate", {}),
]


def two_tasks(tmp_path: Path) -> list[Path]:
    one = tmp_path / "tiny-one"
    two = tmp_path / "tiny-two"
    for folder, name in ((one, "tiny-one"), (two, "tiny-two")):
        shutil.copytree(TINY, folder)
        toml = folder / "task.toml"
        toml.write_text(toml.read_text().replace('name = "tiny-task"', f'name = "{name}"'))
    return [one, two]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


def test_two_tasks_two_models_two_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    good = write_replay(tmp_path / "good.jsonl", GOOD)
    base = write_replay(tmp_path / "base.jsonl", BASE)
    one, two = two_tasks(tmp_path)
    models = f"replay:{good},replay:{base}"
    out_dir = tmp_path / "out"
    proc = mlagent(
        "bench",
        "--task-dir",
        str(one),
        "--task-dir",
        str(two),
        "--models",
        models,
        "--runs",
        "2",
        "--parallel",
        "2",
        "--out",
        str(out_dir),
        "--json",
        home=home,
        check=True,
    )
    out = json.loads(proc.stdout)
    rows = {(r["task"], r["model"]): r for r in out["results"]}
    assert len(rows) == 4 and len(out["runs"]) == 8
    for task in ("tiny-one", "tiny-two"):
        g, b = rows[(task, f"replay:{good}")], rows[(task, f"replay:{base}")]
        assert g["runs"] == 2 and g["success_rate"] == 1.0 and g["valid_rate"] == 1.0
        assert g["mean_improvement_pct"] == pytest.approx(50.0)
        assert g["sem_improvement_pct"] == pytest.approx(0.0)
        assert g["bronze_rate"] == 1.0 and g["any_medal_rate"] == 1.0 and g["gold_rate"] == 0
        assert g["best_attempt"] == pytest.approx(0.5)
        assert g["best_submission"] == pytest.approx(0.5)
        assert sum(g["failures"].values()) == 0
        # the replay ran out after Validate: auto-submitted the baseline's own predictions
        assert b["success_rate"] == 0 and b["valid_rate"] == 1.0
        assert b["mean_improvement_pct"] == pytest.approx(0.0)
        assert b["above_median_rate"] == 0 and b["any_medal_rate"] == 0
        assert b["best_attempt"] == pytest.approx(1.0)
        assert b["failures"]["parse_errors"] == 2  # one per run
        assert b["failures"]["no_submission"] == 0
    # ratios: good 1, baseline 2, base (= the baseline, feasible) 2. MLGym's AUP: tau_max =
    # log10(ceil(1.05 * 2)) = 0.477 -> 0.5; log10(2) = 0.30103 rounds up to the grid point
    # 301 * 0.5 / 499 = 0.301603, so the area is 0.5 - 0.301603
    for kind in ("best_attempt", "best_submission"):
        assert out["aup"][kind] == pytest.approx(
            {f"replay:{good}": 0.5, f"replay:{base}": 0.198397, "baseline": 0.198397}, abs=1e-6
        )
    for run in out["runs"]:
        assert run["tokens_in"] > 0 and run["wall_seconds"] > 0 and run["cost_usd"] == 0
    # every run is a session of its own, in the store
    ids = {r["session_id"] for r in out["runs"]}
    listed = json.loads(mlagent("sessions", "list", "--json", home=home, check=True).stdout)
    assert ids <= {s["id"] for s in listed["sessions"]} and len(ids) == 8
    # files: tables and figures that are real PNGs of a sensible size
    files = out["files"]
    for name in ("profiles", "aup_vs_cost", "score_over_steps"):
        width, height = png_size(Path(files[name]))
        assert width > 400 and height > 300
    md = Path(files["markdown"]).read_text()
    assert "| tiny-one |" in md and "AUP (best attempt" in md
    csv_lines = Path(files["results_csv"]).read_text().splitlines()
    assert len(csv_lines) == 5 and csv_lines[0].startswith("task,model,runs,success_rate")
    # the score tables it wrote are what `bench aup` reads: same AUP on the same shared axis
    both = ("--scores", files["scores_best_attempt"], "--scores", files["scores_best_submission"])
    aup = json.loads(mlagent("bench", "aup", *both, "--json", check=True).stdout)
    for kind in ("best_attempt", "best_submission"):
        table = aup["tables"][Path(files[f"scores_{kind}"]).name]
        assert table["aup"] == pytest.approx(out["aup"][kind], abs=1e-6)
    # re-rendered from the store alone
    again = json.loads(
        mlagent("bench", "report", out["bench_id"], "--json", home=home, check=True).stdout
    )
    assert again["results"] == out["results"] and again["aup"] == out["aup"]
    # the score-over-steps figure's data: good validates 0.5 at step 3; base 1.0 at step 2
    store = Store(home / "mlagent.db")
    curves = score_curves(build_report(store, out["bench_id"]))
    store.close()
    for task in ("tiny-one", "tiny-two"):
        g, b = curves[task][f"replay:{good}"], curves[task][f"replay:{base}"]
        assert [x for x in g if x == x] == [0.5, 0.5] and len(g) == 4
        assert b[1:] == [1.0] and b[0] != b[0]  # nan before the first validate
    benches = json.loads(mlagent("bench", "list", "--json", home=home, check=True).stdout)
    assert benches["benches"][0]["id"] == out["bench_id"]
    assert benches["benches"][0]["done"] == 8


def test_unknown_task_or_model_fails_before_anything_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    good = write_replay(tmp_path / "good.jsonl", GOOD)
    cases = [
        (["--tasks", "no-such-task", "--models", f"replay:{good}"], "unknown task"),
        (["--task-dir", str(TINY), "--models", f"replay:{tmp_path}/missing.jsonl"], "not found"),
        (["--task-dir", str(TINY), "--models", f"replay:{good},nosuchbackend/x"], "unknown model"),
        (["--task-dir", str(TINY), "--models", ""], "no models"),
    ]
    for args, message in cases:
        proc = mlagent("bench", *args, home=home)
        assert proc.returncode == 2, proc.stdout  # a usage error: nothing ran
        assert message in proc.stderr
    listed = json.loads(mlagent("sessions", "list", "--json", home=home, check=True).stdout)
    assert listed["sessions"] == []
    assert json.loads(mlagent("bench", "list", "--json", home=home).stdout)["benches"] == []


def test_crashed_run_is_counted_and_the_bench_goes_on(tmp_path: Path, home, store) -> None:
    good = write_replay(tmp_path / "good.jsonl", GOOD)
    broken = tmp_path / "broken"
    shutil.copytree(TINY, broken)
    (broken / "task.toml").write_text(
        (broken / "task.toml").read_text().replace('name = "tiny-task"', 'name = "broken"')
    )
    (broken / "prepare.py").write_text("raise SystemExit('the data source is gone')\n")
    config = make_config(resolve_tasks(None, [broken, TINY]), [f"replay:{good}"])
    bench_id = start_bench(home, store, config)
    assert BenchRunner(home, store, bench_id, config).run() == "finished"
    report = build_report(store, bench_id)
    rows = {r.task: r for r in report.results}
    assert rows["broken"].failures["crashed"] == 1 and rows["broken"].valid_rate == 0
    assert rows["tiny-task"].success_rate == 1.0
    crashed = [r for r in report.runs if r.status == "crashed"]
    assert len(crashed) == 1 and "the data source is gone" in crashed[0].error
    # AUP still computed: the crashed method is infeasible on that task
    assert report.profiles["best_submission"].ratios["broken"][f"replay:{good}"] == (
        pytest.approx(1.05)
    )


def test_resume_runs_only_what_is_missing(tmp_path: Path, home, store) -> None:
    good = write_replay(tmp_path / "good.jsonl", GOOD)
    config = make_config(resolve_tasks(None, [TINY]), [f"replay:{good}"], runs=3)
    bench_id = start_bench(home, store, config)
    runner = BenchRunner(home, store, bench_id, config)

    def stop_after_first(job, status, session_id) -> None:  # noqa: ANN001
        if status == "done":
            runner.stop()

    assert runner.run(stop_after_first) == "interrupted"
    done = [r for r in bench_sessions(store, bench_id) if r["status"] == "done"]
    assert len(done) == 1
    again = BenchRunner(home, store, bench_id, config)
    assert [j.run_index for j in again.pending()] == [1, 2]
    assert again.run() == "finished"
    rows = bench_sessions(store, bench_id)
    assert [r["status"] for r in rows] == ["done"] * 3
    assert len({r["session_id"] for r in rows}) == 3
    assert done[0]["session_id"] == rows[0]["session_id"]  # the first run was not run again
    assert build_report(store, bench_id).results[0].runs == 3
    assert list_benches(store)[0]["status"] == "finished"


def test_bench_aup_table_errors(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("task,higher_is_better,baseline,a,b\nx,true,0.5,0.8,\n")
    proc = mlagent("bench", "aup", "--scores", str(table))
    assert proc.returncode == 1 and "missing value" in proc.stderr
    table.write_text("task,higher_is_better,a\nx,true,0.5\n")
    proc = mlagent("bench", "aup", "--scores", str(table))
    assert proc.returncode == 1 and "baseline" in proc.stderr
    table.write_text("task,higher_is_better,baseline,a\nx,false,2,1\ny,true,1,3\n")
    args = ("bench", "aup", "--scores", str(table), "--json", "--definition", "linear")
    proc = mlagent(*args, check=True)
    # ratios x: a 1, baseline 2; y: a 1, baseline 3; tau_max 3
    assert json.loads(proc.stdout)["tables"]["t.csv"]["aup"] == pytest.approx(
        {"baseline": 0.5, "a": 2.0}
    )
    for bad, message in (
        (("--definition", "cubic"), "unknown AUP definition"),
        (("--tau-max", "0"), "tau_max must be"),
    ):
        proc = mlagent("bench", "aup", "--scores", str(table), *bad)
        assert proc.returncode == 1 and message in proc.stderr


def test_bench_error_type_for_bad_options() -> None:
    with pytest.raises(BenchError, match="no tasks"):
        resolve_tasks([], [])
    with pytest.raises(BenchError, match="twice"):
        make_config(resolve_tasks(None, [TINY]), ["local", "local"])


def test_interrupt_then_resume_from_the_command_line(tmp_path: Path) -> None:
    """Ctrl-C stops the live session; --resume continues it and runs only the missing run."""
    home = tmp_path / "home"
    slow_solve = "import time\ntime.sleep(3)\n" + SOLVE
    slow = [
        research("Write File", {"file_name": "solve.py", "content": slow_solve}),
        *GOOD[1:],
    ]
    model = f"replay:{write_replay(tmp_path / 'slow.jsonl', slow)}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home)}
    argv = [sys.executable, "-m", "mlagent_tui", "bench", "--task-dir", str(TINY)]
    proc = subprocess.Popen(
        [*argv, "--models", model, "--runs", "2"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell that ran us in the background ignores SIGINT, and children inherit that;
        # give the bench the default, as an interactive terminal would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    store = (
        Store(home / "mlagent.db") if _wait_for(lambda: (home / "mlagent.db").exists()) else None
    )
    assert store is not None
    assert _wait_for(lambda: _started(store))
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "--resume" in stderr
    bench_id = list_benches(store)[0]["id"]
    first = bench_sessions(store, bench_id)
    assert [r["status"] for r in first] == ["interrupted"]
    out = json.loads(mlagent("bench", "--resume", bench_id, "--json", home=home, check=True).stdout)
    assert [r["status"] for r in out["runs"]] == ["finished", "finished"]
    assert out["runs"][0]["session_id"] == first[0]["session_id"]  # continued, not redone
    assert out["results"][0]["success_rate"] == 1.0
    listed = json.loads(mlagent("sessions", "list", "--json", home=home, check=True).stdout)
    assert len(listed["sessions"]) == 2
    assert mlagent("bench", "--resume", "bench-nope", home=home).returncode == 2
    store.close()


def _wait_for(predicate, timeout: float = 60.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except Exception:  # noqa: BLE001, S110 - the database may not have its tables yet
            pass
        time.sleep(0.1)
    return False


def _started(store: Store) -> bool:
    benches = list_benches(store)
    return bool(benches) and any(
        r["status"] == "running" for r in bench_sessions(store, benches[0]["id"])
    )
