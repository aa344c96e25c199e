"""The local executor against hostile scripts: every case ends with a clear reason."""

from __future__ import annotations

import subprocess
import time
import warnings
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox.base import OutputCapture
from mlagent_tui.core.sandbox.local import LocalExecutor
from mlagent_tui.core.selftest import run_selftest

from .conftest import bwrap_ready

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def ex() -> LocalExecutor:
    return LocalExecutor()


def test_streams_lines_and_measures(ex: LocalExecutor, ws: Path) -> None:
    lines: list[str] = []
    res = ex.run("python -c \"print('a'); print('b')\"; echo c", cwd=ws, on_output=lines.append)
    assert res.ok and lines == ["a", "b", "c"]
    assert res.duration_s > 0 and res.peak_rss_mb > 0 and res.isolation.startswith("bubblewrap")


def test_workspace_is_writable_and_cwd(ex: LocalExecutor, ws: Path) -> None:
    res = ex.run("pwd; echo hi > out.txt", cwd=ws)
    assert res.ok and res.output.strip() == "/workspace"
    assert (ws / "out.txt").read_text() == "hi\n"


def test_memory_limit_kills_with_reason(ex: LocalExecutor, ws: Path) -> None:
    (ws / "grow.py").write_text("x=[]\nwhile True: x.append(bytearray(8<<20))\n")
    res = ex.run("python grow.py", cwd=ws, mem_mb=200)
    assert res.killed_reason == "memory" and not res.ok


def test_one_huge_allocation_is_a_memory_kill(ex: LocalExecutor, ws: Path) -> None:
    res = ex.run("python -c 'bytearray(50 * 1024**3)'", cwd=ws, mem_mb=200)
    assert res.killed_reason == "memory" and "MemoryError" in res.output


def test_timeout_leaves_no_process_behind(ex: LocalExecutor, ws: Path) -> None:
    marker = "mlagent-test-orphan-sleep"
    start = time.perf_counter()
    res = ex.run(
        f"(exec -a {marker} sleep 600) & python -c 'import time; time.sleep(600)'",
        cwd=ws,
        timeout_s=1,
    )
    assert res.timed_out and res.killed_reason == "timeout"
    assert time.perf_counter() - start < 10
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert left.strip() == ""


def test_term_ignoring_script_is_killed(ex: LocalExecutor, ws: Path) -> None:
    (ws / "stubborn.py").write_text(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n"
    )
    res = ex.run("python stubborn.py", cwd=ws, timeout_s=0.5)
    assert res.timed_out and res.duration_s < 8


def test_gigabyte_of_output_is_capped_not_blocked(ex: LocalExecutor, ws: Path) -> None:
    seen: list[str] = []
    (ws / "gig.py").write_text(
        "import sys\nb = ('z' * 1023 + '\\n') * 1024\n"
        "for _ in range(1024):\n    sys.stdout.write(b)\nprint('END')\n"
    )
    res = ex.run("python gig.py", cwd=ws, timeout_s=120, on_output=seen.append)
    assert res.exit_code == 0 and res.output_truncated
    assert len(res.output) < 2_000_000
    assert seen[-1] == "END" and "bytes of output cut" in res.output


def test_fork_bomb_is_contained(ex: LocalExecutor, ws: Path) -> None:
    (ws / "bomb.py").write_text(
        "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n"
    )
    res = ex.run("python bomb.py", cwd=ws, timeout_s=5)
    assert not res.ok and res.killed_reason in {"processes", "timeout", "memory"}
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", "bomb.py"], capture_output=True, text=True).stdout
    assert left.strip() == ""


def test_network_private_and_outside_writes_refused(tmp_path: Path) -> None:
    report = run_selftest("local")
    failed = [p for p in report.probes if not p.ok]
    assert report.ok, failed


def test_fallback_without_bwrap_warns_loudly(ws: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex = LocalExecutor(use_bwrap=False)
    assert any("not isolated" in str(w.message) or "bwrap" in str(w.message) for w in caught)
    res = ex.run("echo ok", cwd=ws)
    assert res.ok and res.isolation.startswith("none")


def test_missing_workspace_is_a_clear_error(ex: LocalExecutor, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="workspace does not exist"):
        ex.run("true", cwd=tmp_path / "nope")


def test_output_capture_keeps_head_and_tail() -> None:
    got: list[str] = []
    cap = OutputCapture(got.append, head_bytes=100, tail_bytes=50)
    for i in range(1000):
        cap.feed(f"line {i}\n".encode())
    cap.feed(b"partial")
    cap.close()
    assert got[0] == "line 0" and got[-1] == "partial" and cap.truncated
    assert any("cut" in g for g in got)
    assert len(cap.text()) < 400


def test_runtime_under_tmp_is_not_hidden(ws: Path) -> None:
    """A venv under /tmp (a CI clone there) must be bound after the /tmp tmpfs, not before."""
    from mlagent_tui.core.sandbox.bwrap import bwrap_args, sandbox_env

    argv = bwrap_args(source=ws, env=sandbox_env(1), tmp_mb=64, read_only=())
    tmpfs = argv.index("--tmpfs")
    binds = [i for i, a in enumerate(argv) if a == "--ro-bind"]
    assert binds and all(i > tmpfs for i in binds)
