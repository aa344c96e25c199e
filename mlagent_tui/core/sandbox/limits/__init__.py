"""Process containment that needs no container: rlimits, a step cgroup, watchers of a run.

The kernel counts a step's memory and processes in its cgroup (cgroup.py) wherever the host
lets mlagent make one; a sampler of RSS (monitor.py) stands in only where it does not.
"""

from __future__ import annotations

import os
import resource

from .cgroup import StepCgroup, layout
from .disk import DiskWatch, tree_mb
from .monitor import SAMPLED_ONLY, ResourceMonitor, group_pids, kill_group, rss_mb, tmpfs_mb

__all__ = [
    "SAMPLED_ONLY",
    "DiskWatch",
    "ResourceMonitor",
    "StepCgroup",
    "group_pids",
    "kill_group",
    "layout",
    "memory_cgroup_available",
    "rss_mb",
    "run_limits",
    "tmpfs_mb",
    "tree_mb",
]


def memory_cgroup_available() -> bool:
    """Whether steps here get a memory cgroup (root, or a delegated subtree with `memory`)."""
    return "memory" in layout().parents


def run_limits(mem_mb: int, timeout_s: float, fsize_mb: int, nproc: int) -> dict[int, int]:
    """The rlimits of one run (applied to the waiting child with prlimit)."""
    # Address space is a backstop well above the memory limit (the cgroup's, or the sampled
    # one), because numpy/BLAS reserve far more virtual memory than they use.
    cpu_s = int(timeout_s * max(os.cpu_count() or 1, 1)) + 5
    return {
        resource.RLIMIT_AS: (mem_mb * 2 + 2048) << 20,
        resource.RLIMIT_CPU: cpu_s,
        resource.RLIMIT_FSIZE: fsize_mb << 20,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NPROC: nproc,
    }
