"""`mlagent` (the app on a new session) and `mlagent replay ID`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .exits import USAGE
from .options import HomeOpt, console, errors, fail, home, store
from .run import start_failed

app = typer.Typer()


def _need_terminal() -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(
            "the app needs a terminal; for a headless run use `mlagent run` "
            "(or `mlagent tasks baseline`)"
        )


def open_live(
    *,
    task: str | None,
    task_dir: Path | None,
    model: str,
    agent: str,
    approval: str,
    sandbox: str,
    search: dict[str, Any] | None = None,
) -> None:
    """A new session in the app (`search`: the search agent's policy, workers, max_nodes)."""
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
            **(search or {}),
        )
        session = Session.create(home(), store(), config)
    except errors() as exc:
        start_failed(exc)
    from ..tui import run_app

    if run_app(home(), session=session).hung_up:
        return  # the terminal closed: the session stopped, and there is nobody to tell
    result = session.result()
    console.print(
        f"session {session.id}: {result.status} ({result.why}); "
        f"replay with: mlagent replay {session.id}",
        highlight=False,
        markup=False,
    )


def not_a_session(arg: str) -> str:
    """Why `arg` names no session: a path (that exists or not) is said to be one."""
    path = Path(arg).expanduser()
    if "/" in arg or arg.endswith((".jsonl", ".json", ".db")) or path.exists():
        if not path.exists():
            return (
                f"{arg} is a path that does not exist; replay takes a session id "
                "(see `mlagent sessions list`)"
            )
        return (
            f"{arg} is a file, not a session id; replay takes a session id (see `mlagent "
            "sessions list`); to run a file of responses again: mlagent run --model replay:FILE"
        )
    return f"no session {arg!r} (see `mlagent sessions list`)"


def open_home() -> None:
    """Recent sessions, `n` for a new one (defaults: the bundled task and the local model)."""
    _need_terminal()
    store().close()  # opening it records sessions whose process is gone as interrupted
    from ..tui import run_app

    run_app(home())


@app.command("replay")
def replay(
    session_id: Annotated[str, typer.Argument(help="The session to replay.")],
    home_dir: HomeOpt = None,
) -> None:
    """Open a logged session in the app, step by step (←/→, home/end)."""
    if store(home_dir).session(session_id) is None:
        fail(not_a_session(session_id), USAGE)
    _need_terminal()
    from ..tui import run_app

    run_app(home(), replay_id=session_id)
