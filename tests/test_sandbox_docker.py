"""The docker executor on a real dockerd with the offline-built sandbox image."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox.docker import DockerExecutor
from mlagent_tui.core.selftest import run_selftest
from mlagent_tui.core.tasks import Task, run_baseline

from .conftest import TINY, require_docker

require_docker()

pytestmark = pytest.mark.docker


def test_isolation_and_limits_hold() -> None:
    report = run_selftest("docker")
    assert report.ok, [p for p in report.probes if not p.ok]


def test_container_is_locked_down(tmp_path: Path) -> None:
    ex = DockerExecutor(tmp_path, mem_mb=512)
    try:
        attrs = ex.client.api.inspect_container(ex.container.id)
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "none" and host["Memory"] == 512 * 1024 * 1024
        assert host["PidsLimit"] == 256 and host["NanoCpus"] > 0
        assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"]
        mounts = [m["Source"] for m in attrs["Mounts"]]
        if ex.mounts is not None:  # root: the per-step overlay arrives through a tmpfs
            assert mounts == [str(ex.mounts.bind_source)]
        else:
            assert mounts == [str(tmp_path.resolve())]
        res = ex.run(
            "id -u; pwd; python -c 'import sklearn, pandas; print(sklearn.__version__)'",
            cwd=tmp_path,
        )
        uid, pwd, version = res.output.splitlines()
        assert uid != "0" and pwd == "/workspace" and version.startswith("1.")
    finally:
        ex.close()
    names = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"id={ex.container.id}"], capture_output=True, text=True
    ).stdout
    assert names.strip() == ""


def test_baseline_runs_in_docker(home, store) -> None:
    res = run_baseline(Task(TINY), home, store, sandbox="docker")
    assert res.valid and res.score == pytest.approx(1.0)
    assert [e.kind for e in store.events(res.session_id)][-3:] == [
        "exec_finished",
        "score_recorded",
        "session_ended",
    ]
