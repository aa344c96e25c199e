"""Every bundled task keeps its contract end to end (`mlagent tasks check`), sandboxed."""

from __future__ import annotations

import pytest

from mlagent_tui.core.tasks import check_task, list_tasks

from .conftest import bwrap_ready

TASKS = list_tasks()


def test_suite_is_broad() -> None:
    modalities = {t.spec.modality for t in TASKS}
    assert len(TASKS) >= 12
    assert {"tabular", "image", "text", "timeseries", "graph"} <= modalities
    assert {"algorithmic", "code"} & modalities
    assert any(not t.spec.metric.higher_is_better for t in TASKS)


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_task_keeps_its_contract(task) -> None:
    report = check_task(task)
    failed = [f"{c.name}: {c.detail}" for c in report.checks if not c.ok]
    assert report.ok, failed
