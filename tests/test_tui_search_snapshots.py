"""SVG snapshots of a search session's replay at 80x24 and 120x40: the tree pane with its marks,
a selected node's plan, script, log and diff. Times that vary between runs are pinned (see
test_tui_snapshots); update with `pytest tests/test_tui_search_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlagent_tui.core.events import PAYLOAD_ADAPTER, Event
from mlagent_tui.core.store import Store
from mlagent_tui.tui.app import MlagentApp

from .conftest import bwrap_ready
from .test_tui_snapshots import SIZE, SMALL, frozen  # noqa: F401 - the fixture
from .tui_search_helpers import search_session

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

PINNED = {
    r"replay:[^\"]*?\.jsonl": "replay:search.jsonl",
    r'"(seconds)":[0-9.e-]+': r'"\1":0.42',
    r'"(exec_start|exec_end|latency_s|overhead_ms)":[0-9.e-]+': r'"\1":1.0',
}


def pinned_copy(store: Store, target: Path) -> Store:
    """The store's sessions in a new file with paths and measured times pinned."""
    copy = Store(target)
    for row in store.sessions():
        for event in store.events(row["id"]):
            text = event.payload.model_dump_json()
            for pattern, repl in PINNED.items():
                text = re.sub(pattern, repl, text)
            payload = PAYLOAD_ADAPTER.validate_json(text)
            copy.append(Event(**{**event.model_dump(exclude={"payload"}), "payload": payload}))
    return copy


@pytest.mark.parametrize(
    ("size", "press"),
    [(SMALL, ["up", "d"]), (SIZE, ["up"])],
    ids=["80x24", "120x40"],
)
def test_search_replay(frozen, snap_compare, tmp_path, home, store, tiny_task, size, press):  # noqa: F811
    """Node #4 (an improvement of the best draft #3) selected: its diff against #3 shows; at
    80x24 the tree, the node and its diff (d) share the screen."""
    search_session(tmp_path, home, store, tiny_task).run()
    copy = pinned_copy(store, tmp_path / "copy" / "mlagent.db")
    app = MlagentApp(home, copy, replay_id="snap0001")
    assert snap_compare(app, press=press, terminal_size=size)
