"""The docker sandbox: one locked-down container per session, and what it does on the host."""

from .executor import LABEL, DockerExecutor, release_workspace
from .host import SandboxBusy

__all__ = ["LABEL", "DockerExecutor", "SandboxBusy", "release_workspace"]
