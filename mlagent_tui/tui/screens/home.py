"""The home screen: recent sessions, a full-text filter, and the ways into a session.

Enter replays the selected session, `r` resumes it (when it has not finished), `n` opens the
new-session form, `/` focuses the filter, `?` or F1 lists the keys, `q` quits.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from typing import Any

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from ...core.safe_text import visible
from ...core.session import BudgetLimits, Session
from ...core.store import Store
from ..view import short_model
from .modals import TextPrompt

# status and scores before the model: a long model name must not push them off an 80-column
# terminal (the model is shown cut to MODEL_WIDTH; the filter still matches its full name)
COLUMNS = ("session", "task", "status", "best", "final", "agent", "model", "started")
MODEL_WIDTH = 24


class HomeScreen(Screen):
    help_name = "recent sessions"
    BINDINGS = [
        Binding("n", "new_session", "New session", id="home.new"),
        Binding("r", "resume", "Resume", id="home.resume"),
        Binding("slash", "focus_filter", "Filter", id="home.filter"),
        Binding("ctrl+r", "reload", "Reload", id="home.reload"),
        Binding("escape", "focus_table", "Back to the list", show=False, id="home.list"),
        Binding("q", "app.quit", "Quit", id="home.quit"),
    ]

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.rows: dict[str, dict[str, Any]] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            "Recent sessions — Enter replays, r resumes, n starts a new one, / filters",
            id="home-title",
        )
        yield Input(placeholder="filter: task, model, status, plan text…", id="filter")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Static("", id="no-sessions")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self.action_reload()
        table.focus()

    def on_screen_resume(self) -> None:
        # back from a session or the form: statuses and scores may have changed, and keys
        # go to the list (r resumes), not to the filter box
        if self.is_mounted:
            self.action_reload()
            self.query_one(DataTable).focus()

    # -- the list ---------------------------------------------------------------------------
    def action_reload(self) -> None:
        text = self.query_one("#filter", Input).value
        try:
            rows = self.store.search_sessions(text, limit=200)
        except Exception as exc:  # noqa: BLE001 - a malformed query must not crash the list
            self.notify(f"filter failed: {exc}", severity="warning")
            rows = []
        best = self._best_scores([r["id"] for r in rows])
        table = self.query_one(DataTable)
        keep = self.selected_id()  # a reload keeps the cursor on the same session
        table.clear()
        self.rows = {}
        for row in rows:
            self.rows[row["id"]] = row
            started = row.get("started_at")
            table.add_row(
                row["id"],
                escape(visible(row.get("task") or "")),  # a cell's str is markup: escaped
                row.get("status") or "",
                _fmt(best.get(row["id"])),
                _fmt(row.get("final_score")),
                escape(visible(row.get("agent") or "")),
                escape(visible(short_model(row.get("model") or "", MODEL_WIDTH))),
                time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "",
                key=row["id"],
            )
        if keep in self.rows:
            table.move_cursor(row=table.get_row_index(keep))
        self._say_when_empty(text, len(rows))

    def _say_when_empty(self, text: str, count: int) -> None:
        """An empty list says why: nothing matches the filter, or no session yet."""
        note = self.query_one("#no-sessions", Static)
        self.query_one(DataTable).set_class(not count, "-empty")
        if count:
            note.display = False
            return
        note.display = True
        if text.strip():
            note.update(
                f"No session matches {text.strip()!r}. Clear the filter to see every session;"
                " escape goes back to the list."
            )
        else:
            note.update("No sessions yet: n starts one.")

    def _best_scores(self, ids: list[str]) -> dict[str, float]:
        """Best valid validate score of each session, in its task's metric direction."""
        if not ids:
            return {}
        sql = (
            "SELECT session_id, MIN(score), MAX(score) FROM scores WHERE valid = 1 AND split ="
            f" 'validate' AND score IS NOT NULL AND session_id IN ({','.join('?' * len(ids))})"
            " GROUP BY session_id"
        )
        try:
            found = self.store.fetch(sql, ids)
        except Exception:  # noqa: BLE001 - scores are decoration; the list still shows
            return {}
        best = {}
        for sid, low, high in found:
            row = self.rows.get(sid) or self.store.session(sid) or {}
            best[sid] = high if _higher_is_better(row.get("task"), _folder(row)) else low
        return best

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.action_reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.query_one(DataTable).focus()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one(DataTable).focus()

    def selected_id(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return key.value

    # -- into a session ---------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.app.open_replay(event.row_key.value)  # type: ignore[attr-defined]

    def action_resume(self) -> None:
        sid = self.selected_id()
        if sid is None:
            self.notify("no session selected", severity="warning")
            return
        row = self.store.session(sid) or {}
        if row.get("status") == "finished":
            self.notify(
                f"session {sid} finished (it submitted) and cannot be resumed; "
                "Enter replays it, f on a step forks it",
                severity="warning",
                timeout=8,
            )
            return
        if row.get("status") in ("budget", "stopped"):  # spent or ended: it needs a new budget
            what = (
                "used its step budget"
                if row["status"] == "budget"
                else f"has ended ({escape(visible(row.get('end_reason') or 'stopped'))})"
            )
            self.app.push_screen(
                TextPrompt(f"Session {sid} {what}. How many more steps?", "e.g. 5"),
                lambda answer: self._resume_with(sid, answer),
            )
            return
        self._launch_resume(sid, None)

    def _resume_with(self, sid: str, answer: str | None) -> None:
        if answer is None:
            return
        try:
            steps = int(answer.strip())
            if steps < 1:
                raise ValueError
        except ValueError:
            self.notify(
                f"not resumed: {answer!r} is not a number of steps (1 or more)", severity="warning"
            )
            return
        self._launch_resume(sid, BudgetLimits(max_steps=steps))

    def _launch_resume(self, sid: str, limits: BudgetLimits | None) -> None:
        app = self.app
        app.launch(  # type: ignore[attr-defined]
            lambda: Session.resume(app.home, app.store, sid, limits=limits),  # type: ignore[attr-defined]
            what=f"resume {sid}",
        )

    def action_new_session(self) -> None:
        from .new_session import NewSessionScreen

        self.app.push_screen(NewSessionScreen())


def _fmt(score: float | None) -> str:
    return "-" if score is None else f"{score:.4g}"


def _folder(row: dict[str, Any]) -> str | None:
    try:
        return (json.loads(row.get("config") or "{}") or {}).get("task_folder")
    except (TypeError, ValueError):
        return None


@lru_cache(maxsize=64)
def _higher_is_better(task: str | None, folder: str | None) -> bool:
    try:
        from ...core.tasks import find_task

        found = find_task(task_dir=folder) if folder else find_task(task, None)
        return found.spec.metric.higher_is_better
    except Exception:  # noqa: BLE001 - a moved task folder: assume higher is better
        return True
