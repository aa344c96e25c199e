"""Cleaning up after a docker session that was killed: its container, mounts and files."""

from __future__ import annotations

import os
from pathlib import Path

from ..image import ImageError, docker_client
from .host import LABEL, WorkspaceLock, chown_tree, remove_workspace_containers, workspace_label
from .mounts import WorkspaceMounts


def release_workspace(workspace: Path) -> bool:
    """After a crash: remove the workspace's leftover container and mounts, give its files back.

    Safe to call whether or not a docker session ever ran there (and without dockerd); False,
    touching nothing, while a live docker sandbox holds the workspace.
    """
    workspace = Path(workspace).resolve()
    label = workspace_label(workspace)
    lock = WorkspaceLock(label)
    if not lock.acquire():
        return False
    try:
        try:
            remove_workspace_containers(docker_client(), label, LABEL)
        except ImageError:
            pass
        if os.getuid() == 0 and workspace.is_dir():
            WorkspaceMounts(workspace, label).close()
            chown_tree(workspace, os.getuid(), os.getgid())
    finally:
        lock.release()
    return True
