"""A minimal home screen: recent sessions from the store; Enter replays the selected one."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from ...core.store import Store


class HomeScreen(Screen):
    BINDINGS = [Binding("q", "app.quit", "Quit"), Binding("r", "reload", "Reload")]

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Recent sessions — Enter replays one", id="home-title")
        yield DataTable(id="sessions", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("session", "task", "model", "status", "final score", "started")
        self.action_reload()

    def action_reload(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for row in self.store.sessions(limit=200):
            score = row.get("final_score")
            started = row.get("started_at")
            table.add_row(
                row["id"],
                row.get("task") or "",
                row.get("model") or "",
                row.get("status") or "",
                "-" if score is None else f"{score:.4g}",
                time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "",
                key=row["id"],
            )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.app.open_replay(event.row_key.value)  # type: ignore[attr-defined]
