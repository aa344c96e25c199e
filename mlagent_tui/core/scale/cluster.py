"""Reaching a Ray cluster, its live nodes, and the sandbox self-test on each before any run.

Ray is imported here only, and only on demand: without the `scale` extra every other command
works and `--ray` says how to install it. A node whose sandbox fails its self-test would run
agents unisolated or fail every run, so it is left out (with the reason) before the first run.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from pydantic import BaseModel

INSTALL_HINT = (
    "--ray needs Ray: pip install 'mlagent[scale]' (ray==2.60.0), on this machine and on every node"
)
PROBE_TIMEOUT_S = 180.0


class ScaleError(RuntimeError):
    """No Ray, no cluster at the address, or no node fit to run."""


class NodeProbe(BaseModel):
    node_id: str
    ip: str
    cpus: float
    ok: bool
    reason: str = ""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ScaleError(INSTALL_HINT) from None
    return ray


def connect(address: str) -> Any:
    """Join the cluster at `address` as its driver: `auto` (the one RAY_ADDRESS names),
    `local` (start one in this process) or HOST:PORT of a head. Returns the ray module."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline machines: no reporting
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    try:
        if address == "local":
            ray.init(include_dashboard=False, **quiet)
        elif address == "auto":
            if not os.environ.get("RAY_ADDRESS"):
                raise ScaleError("--ray auto joins the cluster RAY_ADDRESS names; it is not set")
            ray.init(address="auto", **quiet)
        else:
            ray.init(address=address, **quiet)
    except ScaleError:
        raise
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; the user needs one line
        raise ScaleError(f"cannot join the Ray cluster at {address}: {exc}") from None
    return ray


def live_nodes(ray: Any) -> dict[str, NodeProbe]:
    """The nodes alive now (node id -> address and CPUs), not yet probed."""
    return {
        n["NodeID"]: NodeProbe(
            node_id=n["NodeID"],
            ip=n.get("NodeManagerAddress", ""),
            cpus=float(n.get("Resources", {}).get("CPU", 0)),
            ok=False,
        )
        for n in ray.nodes()
        if n.get("Alive")
    }


def _selftest(sandbox: str) -> tuple[str, bool, str]:
    """Runs on a node: its sandbox self-test; (node id, passed, the failed probes)."""
    import ray

    from ..selftest import run_selftest

    report = run_selftest(sandbox)
    failed = "; ".join(f"{p.name} ({p.detail[:120]})" for p in report.probes if not p.ok)
    return ray.get_runtime_context().get_node_id(), report.ok, failed


def probe_nodes(ray: Any, sandbox: str, timeout_s: float = PROBE_TIMEOUT_S) -> list[NodeProbe]:
    """One self-test task pinned to each live node. Nodes that share a host take turns (the
    probes count that host's processes, so two at once would see each other's); hosts probe
    at the same time."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = live_nodes(ray)
    by_host: dict[str, list[NodeProbe]] = {}
    for node in nodes.values():
        by_host.setdefault(node.ip, []).append(node)
    remote = ray.remote(_selftest)
    rounds = max((len(v) for v in by_host.values()), default=0)
    for i in range(rounds):
        batch = [hosts[i] for hosts in by_host.values() if i < len(hosts)]
        refs = {
            remote.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            ).remote(sandbox): node
            for node in batch
        }
        deadline = time.monotonic() + timeout_s
        pending = list(refs)
        while pending:
            left = deadline - time.monotonic()
            done, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, left))
            if not done:
                for ref in pending:
                    refs[ref].reason = f"the self-test did not finish in {timeout_s:.0f}s"
                    ray.cancel(ref, force=True)
                break
            node = refs[done[0]]
            try:
                _, ok, failed = ray.get(done[0])
            except Exception as exc:  # noqa: BLE001 - a node that cannot even probe is out
                node.reason = f"the self-test could not run: {str(exc).splitlines()[0][:200]}"
                continue
            node.ok, node.reason = ok, "" if ok else f"sandbox self-test failed: {failed}"
    return list(nodes.values())
