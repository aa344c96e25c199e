"""`mlagent run | resume | fork` and `mlagent sessions ...`: sessions without a screen."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .cli import HomeOpt, JsonOpt, TaskDirOpt, app, console, emit_json, err, fail, home, store

sessions_app = typer.Typer(help="Logged sessions: list, show, export.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        help="local | local:PATH.gguf | replay:PATH.jsonl | a litellm id (openai/gpt-4o, ...)",
    ),
]
AgentOpt = Annotated[str, typer.Option("--agent", help="research | solve")]
ApprovalOpt = Annotated[str, typer.Option("--approval", help="auto | confirm-exec | confirm-all")]


class Progress:
    """A live one-line view of the session on stderr: step, action, best score, tokens, cost."""

    def __init__(self, session: Any, console: Console) -> None:
        self.s = session
        self.action = "thinking"
        self.last_line = ""
        self.live = Live(self.render(), console=console, refresh_per_second=8, transient=True)

    def render(self) -> Text:
        s = self.s
        best = f"{s.best.score:.4g}" if s.best else "-"
        return Text.assemble(
            ("mlagent ", "bold"),
            f"{s.task.name} | step {s.completed + 1}/{s.max_steps} | ",
            (self.action, "cyan"),
            f" | best {best} (baseline {s.task.spec.baseline.score:.4g})",
            f" | tokens {s.tokens_in + s.tokens_out} | ${s.cost_usd:.4f}",
            ("\n  " + self.last_line[:100], "dim") if self.last_line else "",
        )

    def __call__(self, event: Any) -> None:
        p = event.payload
        if p.kind == "agent_response":
            self.action = p.action or "(unparsed response)"
        elif p.kind == "exec_output" and p.lines:
            self.last_line = p.lines[-1]
        elif p.kind == "action_finished":
            mark = "ok" if p.ok else "error"
            first = p.observation.strip().splitlines()[:1]
            self.live.console.print(
                f"step {event.step}: {p.action} [{mark}] {first[0][:90] if first else ''}",
                highlight=False,
                markup=False,
            )
            self.action, self.last_line = "thinking", ""
        self.live.update(self.render())


def terminal_approver(response: Any) -> Any:
    from .core.session import Approval

    err.print(
        f"[bold yellow]approve?[/] {response.action} {json.dumps(response.action_input)[:200]}",
        highlight=False,
    )
    answer = typer.prompt("y = yes, n = no", default="y", err=True).strip().lower()
    if answer.startswith("y"):
        return Approval(approved=True)
    return Approval(
        approved=False, reason=typer.prompt("reason (the model sees it)", default="", err=True)
    )


def drive(session: Any, json_out: bool) -> None:
    """Run a session with a live view; print the result (one JSON object with --json)."""
    if session.approval != "auto":
        if not sys.stdin.isatty():
            fail("--approval confirm-* needs a terminal to ask you; use --approval auto")
        session.approver = terminal_approver
    progress = Progress(session, err)
    session.subscribe(progress)
    try:
        with progress.live:
            result = session.run()
    except KeyboardInterrupt:
        session.stop("interrupted")
        err.print(f"interrupted; resume with: mlagent resume {session.id}")
        raise typer.Exit(130) from None
    if json_out:
        emit_json(result.model_dump())
        return
    table = Table(show_header=False, box=None)
    for key, value in result.model_dump().items():
        table.add_row(key, str(value))
    console.print(table)


def _errors() -> tuple[type[Exception], ...]:
    from .core.llm.base import ModelError
    from .core.sandbox.image import ImageError
    from .core.session import SessionError
    from .core.tasks import TaskError
    from .core.workspace import WorkspaceError

    return (
        SessionError,
        TaskError,
        ModelError,
        ImageError,
        WorkspaceError,
        ValueError,
        FileNotFoundError,
    )


@app.command("run")
def run(
    task: Annotated[str | None, typer.Option("--task", help="A bundled task.")] = None,
    task_dir: TaskDirOpt = None,
    model: ModelOpt = "local",
    agent: AgentOpt = "research",
    sandbox: Annotated[str, typer.Option("--sandbox", help="local | docker")] = "local",
    max_steps: Annotated[int | None, typer.Option(help="Default: the task's limit.")] = None,
    max_minutes: Annotated[float | None, typer.Option()] = None,
    max_cost: Annotated[float | None, typer.Option(help="US dollars.")] = None,
    max_tokens: Annotated[int | None, typer.Option()] = None,
    approval: ApprovalOpt = "auto",
    seed: Annotated[int, typer.Option(help="Data seed.")] = 0,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Run an agent on a task headless, with a live progress line."""
    from .core.session import Session, SessionConfig

    try:
        config = SessionConfig(
            task=task,
            task_dir=str(task_dir) if task_dir else None,
            model=model,
            agent=agent,
            sandbox=sandbox,
            max_steps=max_steps,
            max_minutes=max_minutes,
            max_cost=max_cost,
            max_tokens=max_tokens,
            approval=approval,
            seed=seed,
        )
        session = Session.create(home(home_dir), store(), config)
    except _errors() as exc:
        fail(str(exc))
    drive(session, json_out)


@app.command("resume")
def resume(
    session_id: Annotated[str, typer.Argument(help="The session to continue.")],
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Continue a session from its last completed step (same workspace and memory)."""
    from .core.session import Session

    try:
        session = Session.resume(home(home_dir), store(), session_id)
    except _errors() as exc:
        fail(str(exc))
    drive(session, json_out)


@app.command("fork")
def fork(
    session_id: Annotated[str, typer.Argument(help="The session to fork.")],
    step: Annotated[int, typer.Option("--step", help="Start from the state after this step.")],
    model: Annotated[str | None, typer.Option("--model", help="Default: the parent's.")] = None,
    max_steps: Annotated[int | None, typer.Option()] = None,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Start a new session from the state after step K of another."""
    from .core.session import Session

    try:
        session = Session.fork(
            home(home_dir),
            store(),
            session_id,
            step,
            model=None,
            **({"model": model} if model else {}),
            max_steps=max_steps,
        )
    except _errors() as exc:
        fail(str(exc))
    drive(session, json_out)


@sessions_app.command("list")
def sessions_list(
    json_out: JsonOpt = False, home_dir: HomeOpt = None, limit: Annotated[int, typer.Option()] = 50
) -> None:
    """Recent sessions: task, model, agent, status, score."""
    rows = store(home_dir).sessions(limit=limit)
    if json_out:
        emit_json({"sessions": rows})
        return
    table = Table("id", "task", "model", "agent", "status", "score", "medal")
    for r in rows:
        score = "-" if r["final_score"] is None else f"{r['final_score']:.4g}"
        table.add_row(
            r["id"], r["task"], r["model"], r["agent"], r["status"], score, r["medal"] or ""
        )
    console.print(table)


@sessions_app.command("show")
def sessions_show(session_id: str, json_out: JsonOpt = False, home_dir: HomeOpt = None) -> None:
    """Steps, actions, scores and the plan's history of one session."""
    from .core.session import session_report

    report = session_report(store(home_dir), session_id)
    if report is None:
        fail(f"no session {session_id!r}")
    if json_out:
        emit_json(report)
        return
    console.print_json(json.dumps(report["session"], default=str))
    table = Table("step", "action", "ok", "observation")
    for s in report["steps"]:
        table.add_row(
            str(s["step"]),
            s["action"] or "",
            "yes" if s["ok"] else "no",
            (s["observation"] or "").strip().split("\n")[0][:80],
        )
    console.print(table)
    for sc in report["scores"]:
        console.print(f"step {sc['step']}: {sc['split']} score={sc['score']} valid={sc['valid']}")
    console.print(f"plan versions: {len(report['plans'])}")


@sessions_app.command("export")
def sessions_export(
    session_id: str,
    responses: Annotated[
        bool, typer.Option("--responses", help="A replay file of the model's responses.")
    ] = False,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="Every event, one per line.")] = True,
    out: Annotated[Path | None, typer.Option("--out", help="File (default stdout).")] = None,
    home_dir: HomeOpt = None,
) -> None:
    """Export a session's events (JSONL) or its responses (for `--model replay:FILE`)."""
    st = store(home_dir)
    if st.session(session_id) is None:
        fail(f"no session {session_id!r}")
    events = st.events(session_id)
    if responses:
        lines = [json.dumps({"content": e.payload.text}) for e in events if e.kind == "llm_call"]
    else:
        lines = [e.model_dump_json() for e in events]
    text = "".join(line + "\n" for line in lines)
    if out:
        out.write_text(text)
        err.print(f"wrote {len(lines)} lines to {out}")
    else:
        sys.stdout.write(text)
