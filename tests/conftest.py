"""Shared fixtures: a fresh home per test, and a tiny task folder to break in many ways."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mlagent_tui.core.home import Home
from mlagent_tui.core.store import Store

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "tiny-task"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.at(tmp_path / "home")


@pytest.fixture
def store(home: Home):
    s = Store(home.db_path)
    yield s
    s.close()


@pytest.fixture
def tiny_task(tmp_path: Path) -> Path:
    """A copy of the tiny task folder that a test may edit."""
    dest = tmp_path / "tiny-task"
    shutil.copytree(TINY, dest)
    return dest


def docker_ready() -> bool:
    try:
        from mlagent_tui.core.sandbox.image import image_exists

        return image_exists()
    except Exception:  # noqa: BLE001
        return False


def bwrap_ready() -> bool:
    return (
        shutil.which("bwrap") is not None
        and subprocess.run(
            ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True
        ).returncode
        == 0
    )
