"""`mlagent sessions ...`: logged sessions (list, show, export)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .options import HomeOpt, JsonOpt, console, emit_json, err, fail, store

app = typer.Typer(help="Logged sessions: list, show, export.", no_args_is_help=True)


@app.command("list")
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


@app.command("show")
def sessions_show(session_id: str, json_out: JsonOpt = False, home_dir: HomeOpt = None) -> None:
    """Steps, actions, scores and the plan's history of one session."""
    from ..core.session import session_report

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


@app.command("export")
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
