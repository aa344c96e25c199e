"""`mlagent` (the app on a new session) and `mlagent replay ID`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .options import HomeOpt, console, errors, fail, home, store

app = typer.Typer()


def _need_terminal() -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(
            "the app needs a terminal; for a headless run use `mlagent run` "
            "(or `mlagent tasks baseline`)"
        )


def open_live(
    *, task: str | None, task_dir: Path | None, model: str, agent: str, approval: str, sandbox: str
) -> None:
    from ..core.session import Session, SessionConfig

    _need_terminal()
    try:
        config = SessionConfig(
            task=task,
            task_dir=str(task_dir) if task_dir else None,
            model=model,
            agent=agent,
            approval=approval,
            sandbox=sandbox,
        )
        session = Session.create(home(), store(), config)
    except errors() as exc:
        fail(str(exc))
    from ..tui import run_app

    run_app(home(), session=session)
    result = session.result()
    console.print(
        f"session {session.id}: {result.status} ({result.reason}); "
        f"score {result.final_score}; replay with: mlagent replay {session.id}",
        highlight=False,
    )


def open_home() -> None:
    """Recent sessions, `n` for a new one (defaults: the bundled task and the local model)."""
    _need_terminal()
    from ..tui import run_app

    run_app(home())


@app.command("replay")
def replay(
    session_id: Annotated[str, typer.Argument(help="The session to replay.")],
    home_dir: HomeOpt = None,
) -> None:
    """Open a logged session in the app, step by step (←/→, home/end)."""
    _need_terminal()
    if store(home_dir).session(session_id) is None:
        fail(f"no session {session_id!r} (see `mlagent sessions list`)")
    from ..tui import run_app

    run_app(home(), replay_id=session_id)
