"""What a Session offers the search driver (core.search): its budgets, pause, temperature,
the adoption of the chosen node's files, and its end. Kept apart to keep run.py small."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..events import FileChanged
from ..store import Store
from .budget import budget_reason
from .config import snapshot_name

if TYPE_CHECKING:
    from .parts import SessionParts

SEARCH_TEMPERATURE = 0.7  # an API model's: diverse candidates are the point of a search


def search_calls(store: Store, session_id: str) -> int:
    """The model calls a search session made (its steps: a replay model resumes after them)."""
    return len(store.events(session_id, kinds=["llm_call"]))


class SearchHost:
    """Mixed into Session; the methods the driver calls beside the Session's own fields."""

    search: Any = None  # the SearchDriver of a search session, else None

    def start_search(self: SessionParts, resumed: bool) -> Any:  # type: ignore[misc]
        """The driver of a search session; a resumed one counts its calls' tokens and cost
        here (they belong to no step, so load_state does not)."""
        from ..search import SearchDriver

        if resumed:
            self.totals_from_store()  # type: ignore[attr-defined]
        return SearchDriver(self)

    def budget_reason(self: SessionParts) -> tuple[str, str] | None:  # type: ignore[misc]
        return budget_reason(self)

    def wait_unpaused(self) -> None:
        self._unpaused.wait()  # type: ignore[attr-defined]

    @property
    def temperature(self) -> float:
        chosen = self.config.sampling_temperature()  # type: ignore[attr-defined]
        return SEARCH_TEMPERATURE if chosen is None else chosen

    def adopt_node(self: SessionParts, node: int) -> None:  # type: ignore[misc]
        """The session's workspace becomes the chosen node's files (so the usual auto-submit
        grades it, and fork and replay find them in the session's own snapshot)."""
        from ..search import node_snapshot

        before = self.workspace.file_hash(self.task.spec.submission.file)
        self.workspace.restore(node_snapshot(node))
        self.workspace.snapshot(snapshot_name(self.completed))
        self.best = None  # the chosen node, not a validated step, is what gets graded
        self.recorder.emit(
            FileChanged(
                path=self.task.spec.submission.file,
                before_hash=before,
                after_hash=self.workspace.file_hash(self.task.spec.submission.file),
                author="system",
                diff=f"the files of the selected node #{node}",
            ),
            step=self.completed,
        )

    def finish_search(self: SessionParts, status: str, reason: str) -> None:  # type: ignore[misc]
        self._finish(status, reason)

    def totals_from_store(self: SessionParts) -> None:  # type: ignore[misc]
        """A resumed search's tokens and cost (its model calls belong to no step)."""
        for event in self.store.events(self.id, kinds=["llm_call"]):
            p = event.payload
            self.tokens_in += p.tokens_in
            self.tokens_out += p.tokens_out
            self.cost_usd += p.cost_usd
