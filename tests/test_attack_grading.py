"""Attacks on grading: a submission that is not a plain file of the workspace, and agent code that
a code-task grader runs. Each asserts the attack fails and nothing on the host changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.tasks import BUNDLED_TASKS, Task, TaskError
from mlagent_tui.core.tasks import spec as tasks_mod

from .agent_helpers import research, write_replay
from .conftest import bwrap_ready, docker_ready

pytestmark = [
    pytest.mark.adversarial,
    pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing"),
]

BACKENDS = [
    "local",
    pytest.param(
        "docker",
        marks=[
            pytest.mark.docker,
            pytest.mark.skipif(not docker_ready(), reason="docker sandbox image missing"),
        ],
    ),
]


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under `root` (links not followed) with its mode and content hash."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        body = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
        out[p.relative_to(root).as_posix()] = f"{st.st_mode:o}:{hashlib.sha256(body).hexdigest()}"
    return out


def refused(result, *words: str) -> None:
    assert not result.valid and result.score is None, result
    for word in words:
        assert word in (result.error or ""), result.error


# -- the submission is read without following links ---------------------------------------------
@pytest.fixture
def tiny(tiny_task: Path, tmp_path: Path) -> tuple[Task, Path, Path]:
    task = Task(tiny_task)
    ws, pv = tmp_path / "ws", tmp_path / "pv"
    task.prepare(ws, pv)
    return task, ws, pv


@pytest.mark.parametrize("kind", ["absolute", "relative"])
def test_symlink_to_the_answers_is_refused(tiny, kind: str) -> None:
    task, ws, pv = tiny
    target = pv / "test.csv" if kind == "absolute" else Path("..") / "pv" / "test.csv"
    (ws / "submission.csv").symlink_to(target)
    refused(task.grade(ws, pv, "test"), "submission.csv is a symbolic link", "regular file")


def test_symlinked_parent_folder_is_refused(tiny_task: Path, tmp_path: Path) -> None:
    text = (tiny_task / "task.toml").read_text()
    (tiny_task / "task.toml").write_text(text.replace('"submission.csv"', '"out/submission.csv"'))
    task = Task(tiny_task)
    ws, pv = tmp_path / "ws", tmp_path / "pv"
    task.prepare(ws, pv)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(pv / "test.csv", outside / "submission.csv")
    (ws / "out").symlink_to(outside)
    refused(task.grade(ws, pv, "test"), "out", "symbolic link")
    (ws / "out").unlink()
    (ws / "out").mkdir()
    shutil.copy(pv / "test.csv", ws / "out" / "submission.csv")  # a plain file there is graded
    assert task.grade(ws, pv, "test").valid


def test_fifo_and_directory_are_refused_without_hanging(tiny) -> None:
    task, ws, pv = tiny
    os.mkfifo(ws / "submission.csv")
    refused(task.grade(ws, pv, "test"), "not a regular file")
    (ws / "submission.csv").unlink()
    (ws / "submission.csv").mkdir()
    refused(task.grade(ws, pv, "test"), "directory")


def test_hard_link_is_graded_as_its_own_bytes(tiny) -> None:
    task, ws, pv = tiny
    (ws / "preds.csv").write_text("id,y\n" + "".join(f"{i},{2 * (i % 7)}\n" for i in range(20, 40)))
    os.link(ws / "preds.csv", ws / "submission.csv")
    g = task.grade(ws, pv, "test")
    assert g.valid and g.score == pytest.approx(0.0)


def test_oversized_submission_is_refused(tiny, monkeypatch) -> None:
    task, ws, pv = tiny
    monkeypatch.setattr(tasks_mod, "MAX_SUBMISSION_BYTES", 1000)
    (ws / "submission.csv").write_text("id,y\n" + "1,1\n" * 1000)
    refused(task.grade(ws, pv, "test"), "larger than")


@pytest.mark.parametrize("backend", BACKENDS)
def test_session_with_a_symlinked_submission_scores_nothing(
    tmp_path, home, store, tiny_task, backend
):
    config = SessionConfig(
        task_dir=str(tiny_task),
        model="replay:" + str(write_replay(tmp_path / "replay.jsonl", ["unused"])),
        sandbox=backend,
    )
    s = Session.create(home, store, config)
    link = f"../../private/{s.id}"

    def relink(split: str) -> str:
        code = (
            "import os\n"
            "if os.path.lexists('submission.csv'):\n    os.remove('submission.csv')\n"
            f"os.symlink('{link}/{split}.csv', 'submission.csv')\nprint('linked')\n"
        )
        return research("Write File", {"file_name": f"link_{split}.py", "content": code})

    s.model.responses[:] = [
        relink("validate"),
        research("Execute Script", {"script_name": "link_validate.py"}),
        research("Validate", {}),
        relink("test"),
        research("Execute Script", {"script_name": "link_test.py"}),
        research("Final Answer", {"final_answer": "gold, honestly"}),
    ]
    result = s.run()
    outputs = [e.payload.observation for e in store.events(s.id, kinds=["action_finished"])]
    assert "linked" in outputs[1] and "linked" in outputs[4], outputs
    assert (s.workspace.root / "submission.csv").is_symlink()
    scores = store.rows("scores", s.id)
    assert [r["split"] for r in scores] == ["validate", "submit"]
    for row in scores:
        assert not row["valid"] and row["score"] is None and row["medal"] is None, row
    assert not result.valid and result.final_score is None
    assert (home.private(s.id) / "test.csv").read_text().startswith("id,y")


# -- task.toml cannot point the host at files outside the workspace -----------------------------
@pytest.mark.parametrize("entry", ["/etc/hosts", "../outside.txt", "data/../../x", ""])
def test_read_only_outside_the_workspace_is_refused(tiny_task: Path, entry: str) -> None:
    text = (tiny_task / "task.toml").read_text()
    (tiny_task / "task.toml").write_text(text.replace('["train.csv"]', json.dumps([entry])))
    with pytest.raises(TaskError, match="read_only") as exc:
        Task(tiny_task)
    assert repr(entry) in str(exc.value) or entry in str(exc.value)


def test_prepare_does_not_chmod_through_a_link(tiny_task: Path, tmp_path: Path) -> None:
    host_file = tmp_path / "host.txt"
    host_file.write_text("precious")
    host_file.chmod(0o644)
    with (tiny_task / "prepare.py").open("a") as fh:
        fh.write("(args.public / 'train.csv').unlink()\n")
        fh.write(f"(args.public / 'train.csv').symlink_to({str(host_file)!r})\n")
    Task(tiny_task).prepare(tmp_path / "ws", tmp_path / "pv")
    assert host_file.stat().st_mode & 0o777 == 0o644


def test_non_utf8_task_toml_is_a_clear_error(tiny_task: Path) -> None:
    (tiny_task / "task.toml").write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(TaskError, match="UTF-8"):
        Task(tiny_task)


def test_disk_limit_is_optional_and_positive(tiny_task: Path) -> None:
    assert Task(tiny_task).spec.limits.disk_mb == 2048
    text = (tiny_task / "task.toml").read_text()
    (tiny_task / "task.toml").write_text(text.replace("[limits]\n", "[limits]\ndisk_mb = 0\n"))
    with pytest.raises(TaskError, match="disk_mb"):
        Task(tiny_task)


# -- agent code that a code-task grader runs stays in the sandbox --------------------------------
def probe(reads: list[Path], writes: list[Path]) -> str:
    """Module-level code that tries every read and write and keeps what worked in LEAKED."""
    return (
        "import json\nLEAKED = []\n"
        f"for _p in {[str(p) for p in reads]!r}:\n"
        "    try:\n        open(_p, 'rb').read(1); LEAKED.append('read ' + _p)\n"
        "    except OSError:\n        pass\n"
        f"for _p in {[str(p) for p in writes]!r}:\n"
        "    try:\n        open(_p, 'w').write('pwned')\n"
        "    except OSError:\n        pass\n"
    )


@pytest.fixture
def code_task(request, tmp_path: Path):
    """A copy of a bundled code task (so an escape would write into the copy), prepared."""

    def make(name: str) -> tuple[Task, Path, Path, Path]:
        folder = tmp_path / name
        shutil.copytree(BUNDLED_TASKS / name, folder)
        task = Task(folder)
        ws, pv = tmp_path / f"{name}-ws", tmp_path / f"{name}-pv"
        task.prepare(ws, pv)
        return task, folder, ws, pv

    return make


ATTACKED = {
    # tit-for-tat, or defect always once anything leaked (2.6 against 2.2)
    "prisoners-dilemma": (
        "strategy",
        "def strategy(history):\n    return 1 if LEAKED else (history[-1][1] if history else 0)\n",
    ),
    "battle-of-sexes": ("strategy", "def strategy(history):\n    return 1 if LEAKED else 0\n"),
    "sat-heuristic": (
        "heuristic",
        "def heuristic(clauses, assignment):\n"
        "    n = max(abs(l) for c in clauses for l in c)\n"
        "    v = next(v for v in range(1, n + 1) if v not in assignment)\n"
        "    return -v if LEAKED else v\n",
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(ATTACKED))
def test_submission_cannot_touch_the_host_or_read_answers(code_task, tmp_path, name, backend):
    task, folder, ws, pv = code_task(name)
    before = tree_digest(folder)
    answers_before = tree_digest(pv)
    marker = Path(f"/tmp/pwned-{uuid.uuid4().hex}")
    reads = [pv / "test.json", pv / "validate.json", folder / "private" / "grade.py", ws]
    writes = [marker, folder / "private" / "pwned.txt", pv / "pwned.txt"]
    function, body = ATTACKED[name]
    sub = ws / task.spec.submission.file
    sub.write_text("LEAKED = []\n" + body)
    honest = task.grade(ws, pv, "test", sandbox=backend)
    assert honest.valid, honest.error
    sub.write_text(probe(reads, writes) + body)
    attacked = task.grade(ws, pv, "test", sandbox=backend)
    # a game's opponents draw fresh streams every grading: the same play scores within noise
    # (well under 0.05), while a strategy that saw anything would switch moves
    noise = 0.05 if function == "strategy" else 0.0
    assert attacked.valid and abs(attacked.score - honest.score) <= noise, (attacked, honest)
    # the same probe, told through an import error: nothing was read
    sub.write_text(probe(reads, writes) + "raise RuntimeError('LEAKED=' + json.dumps(LEAKED))\n")
    told = task.grade(ws, pv, "test", sandbox=backend)
    refused(told, "LEAKED=[]")
    assert not marker.exists()
    assert tree_digest(folder) == before and tree_digest(pv) == answers_before


SLOW_BODY = (BUNDLED_TASKS / "code-speedup" / "env" / "compute.py").read_text()

SPEEDUP_ATTACKS = {
    # the worker's clock, faked: time runs 1000 times slower for everyone in the process
    "fake clock": (
        "import time as _t, __main__ as _m\n_real = _t.perf_counter\n_t0 = _real()\n"
        "def _slow():\n    return _t0 + (_real() - _t0) / 1000\n"
        "_t.perf_counter = _slow\n_m.__dict__['perf_counter'] = _slow\n"
        "_t.perf_counter_ns = lambda: int(_slow() * 1e9)\n"
    ),
    # the split's seeds, read to precompute every output before the timer starts
    "read answers": "",
    # a detached busy process that would slow the original down while it is timed
    "busy neighbour": (
        "import os as _os\nif _os.fork() == 0:\n    _os.setsid()\n"
        "    if _os.fork() == 0:\n        import time as _tt\n        _end = _tt.time() + 20\n"
        "        while _tt.time() < _end:\n            pass\n    _os._exit(0)\n"
        "_os.wait()\n"
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("attack", sorted(SPEEDUP_ATTACKS))
def test_compute_cannot_fake_a_speedup(code_task, attack, backend) -> None:
    task, folder, ws, pv = code_task("code-speedup")
    before = tree_digest(folder)
    marker = Path(f"/tmp/pwned-{uuid.uuid4().hex}")
    reads = [pv / "test.json", folder / "private" / "grade.py"]
    code = probe(reads, [marker, pv / "pwned.txt"]) + "_CACHE = None\n" + SPEEDUP_ATTACKS[attack]
    if attack == "read answers":
        code += PRECOMPUTE.format(answers=str(pv / "test.json"))
    (ws / "compute.py").write_text(code + SLOW_BODY + CACHED)
    g = task.grade(ws, pv, "test", sandbox=backend)
    assert g.valid, g.error
    assert g.score < task.spec.thresholds.median, g.score  # no faked speed-up
    assert not marker.exists() and tree_digest(folder) == before


PRECOMPUTE = """
_CACHE = None
try:
    import json as _js, sys as _sys
    _spec = _js.load(open({answers!r}))
    _m = _sys.modules["__main__"]
    _CACHE = {{}}
    for _s in _spec["seeds"]:
        _d = _m.make_input(_s, **_spec["shape"])
        _CACHE[repr(_d["bias"])] = _d
except Exception:
    _CACHE = None
"""

# every output of the split computed at import, before any timer starts
CACHED = """
_slow_compute = compute
for _k, _d in list((_CACHE or {}).items()):
    _CACHE[_k] = _slow_compute(_d)


def compute(data):
    key = repr(data["bias"])
    if _CACHE and key in _CACHE:
        return _CACHE[key]
    return _slow_compute(data)
"""
