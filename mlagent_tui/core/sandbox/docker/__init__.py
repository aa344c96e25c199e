"""The docker sandbox: one locked-down container per session, and what it does on the host."""

from .executor import DockerExecutor
from .host import LABEL, SandboxBusy
from .release import release_workspace

__all__ = ["LABEL", "DockerExecutor", "SandboxBusy", "release_workspace"]
