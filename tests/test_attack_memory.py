"""Memory a sampler of RSS cannot see: /dev/shm files and unmapped memfd buffers, on both
backends, and a grader that allocates far past its limit. Run as root, each attack writes at
most ~1.5 GB in chunks and must be stopped near the limit, never run to the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox.local import LocalExecutor
from mlagent_tui.core.selftest.memory import LIMIT_MB, MEMFD_FILL, SHM_FILL, written_mb
from mlagent_tui.core.tasks import Task, TaskError

from .conftest import bwrap_ready, docker_ready

pytestmark = [pytest.mark.adversarial]

# needs no grading library: it is killed long before it prints its one JSON line
GREEDY_GRADER = """
import json

hoard = [b"x" * (64 << 20) for _ in range(19)]  # 1.2 GB, every page touched
print(json.dumps({"score": float(len(hoard)), "valid": True, "error": None}))
"""

needs_bwrap = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap is not usable here")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    (path / "shm.py").write_text(SHM_FILL)
    (path / "memfd.py").write_text(MEMFD_FILL)
    return path


@pytest.fixture
def local() -> Iterator[LocalExecutor]:
    executor = LocalExecutor()
    yield executor
    executor.close()


# -- local backend -----------------------------------------------------------------------------
@needs_bwrap
def test_local_dev_shm_fill_is_stopped(local: LocalExecutor, ws: Path) -> None:
    res = local.run("python shm.py", cwd=ws, mem_mb=LIMIT_MB, timeout_s=120)
    assert "SHM:full" not in res.output, res.output[-300:]
    assert written_mb(res.output) <= LIMIT_MB, res.output[-300:]
    assert res.killed_reason == "memory" or "SHM:refused" in res.output, res
    assert not res.ok


@needs_bwrap
def test_local_unmapped_memfd_is_killed_for_memory(local: LocalExecutor, ws: Path) -> None:
    res = local.run("python memfd.py", cwd=ws, mem_mb=LIMIT_MB, timeout_s=120)
    assert "MEMFD:full" not in res.output, res.output[-300:]
    assert written_mb(res.output) <= LIMIT_MB, res.output[-300:]
    assert res.killed_reason == "memory", res
    # the peak is the kernel's count of the step: the buffer shows in it
    assert res.peak_rss_mb > LIMIT_MB / 2, res.peak_rss_mb


@needs_bwrap
def test_local_step_survives_and_next_step_is_clean(local: LocalExecutor, ws: Path) -> None:
    local.run("python memfd.py", cwd=ws, mem_mb=LIMIT_MB, timeout_s=120)
    res = local.run("python -c 'print(2 + 2)'; ls -A /dev/shm | wc -l", cwd=ws, mem_mb=LIMIT_MB)
    assert res.ok and res.output.split() == ["4", "0"], res


@needs_bwrap
def test_local_dev_itself_takes_no_files(local: LocalExecutor, ws: Path) -> None:
    # bwrap's /dev is a tmpfs of no size: a file there would be memory no limit bounds
    res = local.run("echo x > /dev/fill && echo WROTE; mkdir /dev/d && echo MADE", cwd=ws)
    assert "WROTE" not in res.output and "MADE" not in res.output, res.output


@needs_bwrap
def test_local_without_a_memory_cgroup_says_what_it_cannot_see(ws: Path) -> None:
    executor = LocalExecutor(memory_cgroup=False)
    try:
        res = executor.run("python shm.py", cwd=ws, mem_mb=LIMIT_MB, timeout_s=120)
        assert "memfd" in res.isolation and "memfd" in executor.isolation, res.isolation
        # /dev/shm is a sized tmpfs counted by the sampler: still bounded
        assert "SHM:full" not in res.output and written_mb(res.output) <= LIMIT_MB + 64
    finally:
        executor.close()


# -- docker backend ----------------------------------------------------------------------------
@pytest.fixture
def docker_ex(ws: Path):  # noqa: ANN201
    if not docker_ready():
        pytest.skip("no dockerd or sandbox image")
    from mlagent_tui.core.sandbox.docker import DockerExecutor

    executor = DockerExecutor(ws, mem_mb=LIMIT_MB)
    yield executor
    executor.close()


@pytest.mark.docker
def test_docker_dev_shm_is_bounded(docker_ex, ws: Path) -> None:  # noqa: ANN001
    res = docker_ex.run("python shm.py", cwd=ws, timeout_s=120)
    assert "SHM:full" not in res.output and written_mb(res.output) <= LIMIT_MB, res.output[-300:]
    assert res.killed_reason == "memory" or "SHM:refused" in res.output, res


@pytest.mark.docker
def test_docker_unmapped_memfd_is_killed_for_memory(docker_ex, ws: Path) -> None:  # noqa: ANN001
    res = docker_ex.run("python memfd.py", cwd=ws, timeout_s=120)
    assert "MEMFD:full" not in res.output and written_mb(res.output) <= LIMIT_MB
    assert res.killed_reason == "memory", res


# -- graders -----------------------------------------------------------------------------------
def _set_grade_mem(task_dir: Path, line: str | None) -> None:
    toml = task_dir / "task.toml"
    text = toml.read_text()
    if line is not None:
        text = text.replace("[limits]\n", f"[limits]\n{line}\n")
    toml.write_text(text)


def test_greedy_grader_is_stopped_with_a_clear_error(tiny_task: Path, tmp_path: Path) -> None:
    (tiny_task / "private" / "grade.py").write_text(GREEDY_GRADER)
    _set_grade_mem(tiny_task, "grade_mem_mb = 256")
    task = Task(tiny_task)
    ws, pv = tmp_path / "ws", tmp_path / "pv"
    task.prepare(ws, pv)
    (ws / "submission.csv").write_text("id,y\n1,1\n")
    result = task.grade(ws, pv, "test")
    assert not result.valid and result.score is None, result
    assert "memory" in (result.error or "") and "256 MB" in (result.error or ""), result.error


def test_grader_memory_limit_defaults_and_is_checked(tiny_task: Path) -> None:
    assert Task(tiny_task).spec.limits.grade_mem_mb == 2048  # an old task.toml still loads
    _set_grade_mem(tiny_task, "grade_mem_mb = 0")
    with pytest.raises(TaskError, match="grade_mem_mb"):
        Task(tiny_task)


def test_a_normal_grader_still_scores_under_its_limit(tiny_task: Path, tmp_path: Path) -> None:
    _set_grade_mem(tiny_task, "grade_mem_mb = 512")
    task = Task(tiny_task)
    ws, pv = tmp_path / "ws", tmp_path / "pv"
    task.prepare(ws, pv)
    answers = (pv / "test.csv").read_text().splitlines()[1:]
    rows = "".join(f"{line.split(',')[0]},0\n" for line in answers)
    (ws / "submission.csv").write_text("id,y\n" + rows)
    result = task.grade(ws, pv, "test")
    assert result.valid and result.score is not None, result


# -- step cgroups ------------------------------------------------------------------------------
def test_empty_step_cgroups_left_behind_are_swept() -> None:
    import subprocess
    import time

    from mlagent_tui.core.sandbox.limits import StepCgroup, layout
    from mlagent_tui.core.sandbox.limits.cgroup import sweep

    if "memory" not in layout().parents:
        pytest.skip("no memory cgroup here (not root, nothing delegated)")
    left, live = StepCgroup(16), StepCgroup(16)  # `left`: as a killed mlagent leaves one
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert live.join(proc.pid) and live.set_memory(64)
        time.sleep(2.1)  # only cgroups born 1+ s ago: none another run is still joining
        for parent in set(layout().parents.values()):
            sweep(parent, min_age_s=2.0)
        assert not any(d.exists() for d in left.dirs.values())
        assert all(d.exists() for d in live.dirs.values())  # a cgroup in use is never taken
    finally:
        live.remove()
        proc.kill()
        proc.wait()
