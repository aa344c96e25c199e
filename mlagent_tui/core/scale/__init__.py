"""Scale-out on Ray: sessions that run on other machines and land whole in this one's store.

Ray is an optional extra (`pip install 'mlagent[scale]'`), imported only when `--ray` is given.
The events are the spine, so a run that happened elsewhere comes back as its events plus its
snapshot objects, and the store derives every row from them as for a local run.
"""

from __future__ import annotations

from .bundle import (
    Relocation,
    SessionBundle,
    export_session,
    land_session,
    pack_folder,
    unpack_folder,
)
from .cluster import (
    INSTALL_HINT,
    NodeProbe,
    ScaleError,
    connect,
    import_ray,
    live_nodes,
    probe_nodes,
)
from .worker import RemoteResult, RemoteRun, run_remote

__all__ = [
    "INSTALL_HINT",
    "NodeProbe",
    "Relocation",
    "RemoteResult",
    "RemoteRun",
    "ScaleError",
    "SessionBundle",
    "connect",
    "export_session",
    "import_ray",
    "land_session",
    "live_nodes",
    "pack_folder",
    "probe_nodes",
    "run_remote",
    "unpack_folder",
]
