"""Attacks on the host's work after a step: what it reads of the workspace and what it
computes on the agent's output must be bounded.

The agent chooses what the workspace holds when the host looks: a FIFO where the host reads
a CSV blocks a plain open() forever, a link takes the read out of the workspace, and one
rewritten text file of many megabytes made the host diff it in full with a quadratic
algorithm. Each host call runs in a thread with a deadline so the open hole fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mlagent_tui.core.agent.tweak import columns_of
from mlagent_tui.core.tasks import Task, runnable_starter
from mlagent_tui.core.workspace import Workspace
from mlagent_tui.core.workspace.diff import text_diff

pytestmark = pytest.mark.adversarial

SECRET = "SECRET-host-file-7f3a"
TINY = Path(__file__).parent / "data" / "tiny-task"


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn()'s result, failing the test if it takes longer than `seconds` (the thread is left
    behind, a daemon, when it hangs)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the host call did not return within {seconds} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def data_folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.csv").write_text("id,a,b,target\n1,0.5,2,1\n2,0.1,3,0\n")
    (root / "test.csv").write_text("id,a,b\n3,0.2,1\n")
    (root / "sample_submission.csv").write_text("id,target\n3,0\n")
    return root


@pytest.mark.parametrize("name", ["sample_submission.csv", "train.csv", "test.csv"])
def test_a_fifo_in_place_of_a_csv_does_not_hang_the_host(tmp_path, name):
    root = data_folder(tmp_path / "ws")
    (root / name).unlink()
    os.mkfifo(root / name)
    columns = within(5, lambda: columns_of(root))
    assert isinstance(columns, list)


def test_a_link_out_of_the_workspace_is_not_read(tmp_path):
    root = data_folder(tmp_path / "ws")
    outside = tmp_path / "host.csv"
    outside.write_text(f"id,{SECRET},target\n1,2,3\n")
    (root / "train.csv").unlink()
    (root / "train.csv").symlink_to(outside)
    (root / "test.csv").write_text(f"id,{SECRET}\n3,1\n")
    columns = within(5, lambda: columns_of(root))
    assert SECRET not in list(columns)


def test_the_starter_script_is_read_no_follow_and_bounded(tmp_path):
    task = Task(TINY)
    script = task.spec.baseline.command.split()[-1]
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(root / script)
    assert within(5, lambda: runnable_starter(task, root)) is None
    (root / script).unlink()
    outside = tmp_path / "host.py"
    outside.write_text(f"print('{SECRET}')\n")
    (root / script).symlink_to(outside)
    assert within(5, lambda: runnable_starter(task, root)) is None


def big_text(size: int, tag: str) -> bytes:
    line = f"{tag},0.123456789,some words of a row that changes\n".encode()
    rows = [line.replace(b"0.123456789", f"{i:011d}".encode()) for i in range(size // len(line))]
    return b"".join(rows)


@pytest.mark.parametrize("mb", [8.5, 50])
def test_a_rewrite_of_a_big_text_file_is_summarised_quickly(tmp_path, mb):
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "meta")
    size = int(mb * 1024 * 1024)
    (root / "big.csv").write_bytes(big_text(size, "a"))
    before = ws.snapshot("before")
    (root / "big.csv").write_bytes(big_text(size, "b"))
    after = ws.snapshot("after")
    start = time.monotonic()
    diff = within(10, lambda: ws.diff_objects("big.csv", before["big.csv"], after["big.csv"]))
    assert time.monotonic() - start < 3
    assert "big.csv" in diff and len(diff) < 10_000
    assert before["big.csv"][:12] in diff and after["big.csv"][:12] in diff


def test_a_small_diff_of_enormous_lines_is_bounded(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "meta")
    (root / "wide.txt").write_text("x" * 300_000 + "\n")
    before = ws.snapshot("before")
    (root / "wide.txt").write_text("y" * 300_000 + "\n")
    after = ws.snapshot("after")
    diff = within(5, lambda: ws.diff_objects("wide.txt", before["wide.txt"], after["wide.txt"]))
    assert len(diff) < 20_000


def test_a_small_edit_is_still_a_unified_diff(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "meta")
    (root / "train.py").write_text("a = 1\nb = 2\n")
    before = ws.snapshot("before")
    (root / "train.py").write_text("a = 1\nb = 3\n")
    after = ws.snapshot("after")
    diff = ws.diff_objects("train.py", before["train.py"], after["train.py"])
    assert "-b = 2\n" in diff and "+b = 3\n" in diff and diff.startswith("--- a/train.py")


def test_many_changed_lines_of_repeated_text_are_diffed_quickly(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace(root, tmp_path / "meta")
    (root / "log.txt").write_text("".join(f"{i % 7}\n" for i in range(60_000)))
    before = ws.snapshot("before")
    (root / "log.txt").write_text("".join(f"{i % 11}\n" for i in range(60_000)))
    after = ws.snapshot("after")
    within(5, lambda: ws.diff_objects("log.txt", before["log.txt"], after["log.txt"]))


def test_the_search_views_script_diff_is_bounded():
    old = "".join(f"{i % 5}\n" for i in range(200_000))
    new = "".join(f"{i % 3}\n" for i in range(200_000))
    text = within(5, lambda: text_diff(old, new, "#1/solution.py", "#2/solution.py"))
    assert "Too large to diff" in text and len(text) < 1_000
