"""Executors: where commands of the agent (or a baseline) run."""

from __future__ import annotations

from pathlib import Path

from .base import ExecResult, Executor, OutputCallback, OutputCapture

__all__ = [
    "Executor",
    "ExecResult",
    "OutputCallback",
    "OutputCapture",
    "make_executor",
    "release_workspace",
]


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
