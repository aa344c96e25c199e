"""`mlagent sessions show` as text, `sessions delete` and `sessions prune`.

Times are shown as local times (ISO-like, to the second); a removal lists what it removes and
asks first, unless --yes (without a terminal to ask, --yes is required).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ..core.safe_text import visible
from .exits import USAGE
from .options import HomeOpt, console, err, fail, home, store

YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
AllOpt = Annotated[
    bool, typer.Option("--all", help="Include the trainer's rollouts (model policy:...).")
]
_SHOWN_CONFIG = ("max_steps", "max_minutes", "max_cost", "max_tokens", "stuck_after", "seed")


def local_time(ts: float | None) -> str:
    """An epoch time as the person's local time, `2026-11-27 05:12:03`; `-` for none."""
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def cost_text(usd: float | None, known: bool) -> str:
    if not known:
        return "unknown"
    return f"${usd or 0:.4f}"


def print_session_fields(row: dict[str, Any]) -> None:
    """The session's row as `field  value` lines: no JSON, no epoch numbers."""
    config = json.loads(row.get("config") or "{}")
    score = "-"
    if row["final_score"] is not None:
        score = f"{row['final_score']:.6g} ({'valid' if row['valid'] else 'not valid'})"
    took = (
        f"{row['ended_at'] - row['started_at']:.0f} s"
        if row["ended_at"] and row["started_at"]
        else "-"
    )
    budget = ", ".join(f"{k}={config[k]}" for k in _SHOWN_CONFIG if config.get(k) is not None)
    parent = f"{row['parent_session_id']} step {row['parent_step']}"
    fields = [
        ("session", row["id"]),
        ("task", row["task"]),
        ("model", row["model"]),
        ("agent", row["agent"]),
        ("sandbox", row["sandbox"]),
        ("status", row["status"]),
        ("end", row["end_reason"] or "-"),
        ("why", row.get("why") or "-"),
        ("last error", row.get("last_error") or "-"),
        ("score", score + (f" {row['medal']}" if row["medal"] else "")),
        ("started", local_time(row["started_at"])),
        ("ended", local_time(row["ended_at"])),
        ("took", took),
        ("tokens", f"{row.get('tokens_in', 0)} in, {row.get('tokens_out', 0)} out"),
        ("cost", f"${row.get('cost_usd', 0):.4f}"),
        ("parse errors", str(row.get("parse_errors", 0))),
        ("settings", budget or "-"),
        ("forked from", parent if row["parent_session_id"] else "-"),
        ("workspace", row["workspace"] or "-"),
    ]
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    for key, value in fields:
        table.add_row(key, Text(visible(str(value))))
    console.print(table)


def print_segments(st: Any, session_id: str) -> None:
    """A resumed session's earlier ends, each kept as it was recorded, and each resume."""
    events = st.events(session_id, kinds=["session_ended", "resumed"])
    if not any(e.kind == "session_ended" for e in events[:-1]):
        return  # one segment: its end is in the fields above
    for e in events:
        p = e.payload
        if e.kind == "session_ended":
            line = f"{local_time(e.ts)}  ended at step {e.step}: {p.status}, {p.reason}"
        elif p.budget:  # a resume with a new budget (a pause's end has none)
            line = f"{local_time(e.ts)}  resumed at step {e.step} with a new budget"
        else:
            continue
        console.print(Text(visible(line)))


def _confirm(what: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        fail(f"{what}: add --yes to confirm (there is no terminal to ask)", USAGE)
    if not typer.confirm(what + "?", default=False, err=True):
        err.print("nothing removed")
        raise typer.Exit(1)


def sessions_delete(
    session_id: Annotated[str, typer.Argument(help="The session to remove.")],
    yes: YesOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Remove a session: its stored rows, its workspace and its snapshots."""
    from ..core.session import SessionError
    from ..core.session.remove import remove_session

    h, st = home(home_dir), store(home_dir)
    if st.session(session_id) is None:
        fail(f"no session {session_id!r} (see `mlagent sessions list`)", USAGE)
    _confirm(f"remove session {session_id} and its files", yes)
    try:
        remove_session(h, st, session_id)
    except SessionError as exc:
        fail(str(exc), USAGE)
    err.print(f"removed session {session_id}", highlight=False)


def sessions_prune(
    older_than: Annotated[
        float | None, typer.Option("--older-than", help="Started more than DAYS ago.", min=0)
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option("--status", help="Only in this state (repeatable): failed, stopped, ..."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List, remove nothing.")] = False,
    include_all: AllOpt = False,
    yes: YesOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Remove the sessions that match every filter (never a running one)."""
    from ..core.session import SessionError
    from ..core.session.remove import remove_session
    from ..core.store.manage import prunable_sessions

    if older_than is None and not status:
        fail("say what to prune: --older-than DAYS and/or --status STATUS", USAGE)
    h, st = home(home_dir), store(home_dir)
    rows = prunable_sessions(st, older_than, status, include_trainer=include_all)
    for r in rows:
        line = f"{r['id']}  {r['status']}  {local_time(r['started_at'])}  {r['task']}"
        console.print(Text(visible(line)))
    if not rows or dry_run:
        err.print(f"{len(rows)} session(s) match{'; nothing removed' if dry_run else ''}")
        return
    _confirm(f"remove these {len(rows)} session(s) and their files", yes)
    removed = 0
    for r in reversed(rows):  # newest first: a fork goes before the session it came from
        try:
            remove_session(h, st, r["id"])
            removed += 1
        except SessionError as exc:
            err.print(Text(f"kept: {visible(str(exc))}"))
    err.print(f"removed {removed} of {len(rows)} session(s)", highlight=False)
