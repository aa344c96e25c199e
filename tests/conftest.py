"""Shared fixtures: a fresh home per test, and a tiny task folder to break in many ways."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mlagent_tui.core.home import Home
from mlagent_tui.core.store import Store

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "tiny-task"

# `local` is the bare bundled model in tests whatever adapter the package ships (a shipped one
# would change every local model's answers); tests/test_adapter.py points this at adapters it
# makes. Set it to a folder before pytest to run the suite with a candidate adapter.
os.environ.setdefault("MLAGENT_ADAPTER_DIR", "none")


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


def require_docker() -> None:
    """Skip (at module level) without dockerd and the image; fail instead where CI needs them."""
    if docker_ready():
        return
    if os.environ.get("MLAGENT_REQUIRE_DOCKER") == "1":
        pytest.fail(
            "docker sandbox image missing: run `mlagent sandbox build --offline`", pytrace=False
        )
    pytest.skip("no dockerd or sandbox image", allow_module_level=True)


HOST_TEXT = "host file: must never change\n"


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    """A file outside the workspace that a link will point at (root-owned when run as root)."""
    outside = tmp_path / "host"
    outside.mkdir()
    target = outside / "secret.txt"
    target.write_text(HOST_TEXT)
    return target


def bwrap_ready() -> bool:
    return (
        shutil.which("bwrap") is not None
        and subprocess.run(
            ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True
        ).returncode
        == 0
    )


@pytest.fixture(scope="module")
def one_torch_thread():  # noqa: ANN201
    """Two OpenMP threads on a shared two-core box spin against each other; one is steadier."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def policy(one_torch_thread):  # noqa: ANN001, ANN201
    """The bundled SmolLM2-135M as a LoRA policy on the CPU (transformers + peft)."""
    from trainer.policy import load_policy

    return load_policy("local", backend="hf", seed=0)
