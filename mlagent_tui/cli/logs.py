"""`mlagent logs ...`: the session database (path, status, backup)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .options import HomeOpt, JsonOpt, console, emit_json, home, store

app = typer.Typer(help="The session database.", no_args_is_help=True)


@app.command("path")
def logs_path(home_dir: HomeOpt = None) -> None:
    """Where the database is."""
    console.print(str(home(home_dir).db_path), highlight=False)


@app.command("status")
def logs_status(json_out: JsonOpt = False, home_dir: HomeOpt = None) -> None:
    """Size, journal mode, migrations, row counts."""
    st = store(home_dir).status()
    if json_out:
        emit_json(st)
        return
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in st.items():
        if key == "size_bytes":
            shown = f"{value / 1e6:.1f} MB" if value >= 100_000 else f"{value / 1e3:.1f} kB"
        elif key == "migrations":
            shown = f"{len(value)} applied (last: {value[-1] if value else '-'})"
        else:
            shown = f"{value:,}" if isinstance(value, int) else str(value)
        table.add_row(key.removesuffix("_bytes").replace("_", " "), shown)
    console.print(table, highlight=False)


@app.command("backup")
def logs_backup(
    dest: Annotated[Path, typer.Argument(help="File or folder.")], home_dir: HomeOpt = None
) -> None:
    """A consistent copy of the database, safe while sessions are writing."""
    console.print(f"backed up to {store(home_dir).backup(dest)}", highlight=False)
