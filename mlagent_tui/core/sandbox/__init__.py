"""Executors: where commands of the agent (or a baseline) run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from .base import DEFAULT_DISK_MB, ExecResult, Executor, OutputCallback, OutputCapture

# The backends and the image build are loaded on first use.
_LAZY = {
    "docker": ("DockerExecutor", "SandboxBusy"),
    "image": ("IMAGE", "ImageError", "build_image", "image_exists"),
    "local": ("LocalExecutor",),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}

if TYPE_CHECKING:
    from .docker import DockerExecutor, SandboxBusy
    from .image import IMAGE, ImageError, build_image, image_exists
    from .local import LocalExecutor

__all__ = [
    "DEFAULT_DISK_MB",
    "IMAGE",
    "DockerExecutor",
    "ExecResult",
    "Executor",
    "ImageError",
    "LocalExecutor",
    "OutputCallback",
    "OutputCapture",
    "SandboxBusy",
    "build_image",
    "image_exists",
    "make_executor",
    "release_workspace",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)


def release_workspace(workspace: Path) -> bool:
    """After a crash of a docker session: its container removed, its files the host's again."""
    from .docker import release_workspace as release

    return release(workspace)


def make_executor(
    backend: str, workspace: Path | None = None, mem_mb: int = 2048, **kwargs: object
) -> Executor:
    """`local` (bubblewrap) or `docker` (one container per session, bound to `workspace`)."""
    if backend == "local":
        from .local import LocalExecutor

        return LocalExecutor(**kwargs)  # type: ignore[arg-type]
    if backend == "docker":
        from .docker import DockerExecutor

        if workspace is None:
            raise ValueError("the docker sandbox needs the session's workspace")
        return DockerExecutor(workspace, mem_mb=mem_mb, **kwargs)  # type: ignore[arg-type]
    raise ValueError(f"unknown sandbox backend {backend!r} (local | docker)")
