"""`mlagent sessions ...`: logged sessions (list, show, export)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Column, Table
from rich.text import Text

from ..core.safe_text import visible
from .exits import USAGE
from .options import HomeOpt, JsonOpt, console, emit_json, err, fail, store
from .search_view import print_tree, tree_report
from .sessions_manage import (
    AllOpt,
    cost_text,
    print_segments,
    print_session_fields,
    sessions_delete,
    sessions_prune,
)

app = typer.Typer(help="Logged sessions: list, show, export, delete, prune.", no_args_is_help=True)


@app.command("list")
def sessions_list(
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
    limit: Annotated[int, typer.Option()] = 50,
    include_all: AllOpt = False,
) -> None:
    """Recent sessions: task, model, agent, status, score, cost (the trainer's: --all)."""
    from ..core.store.manage import listed_sessions

    rows = listed_sessions(store(home_dir), limit=limit, include_trainer=include_all)
    if json_out:
        emit_json({"sessions": rows})
        return
    width = max((len(r["id"]) for r in rows), default=2)
    table = Table(
        Column("id", no_wrap=True, min_width=width),  # an id is never cut: it is typed again
        Column("task", overflow="fold"),
        Column("model", overflow="fold"),
        Column("agent", overflow="fold"),
        Column("status", no_wrap=True),
        Column("score", no_wrap=True),
        Column("cost", no_wrap=True, justify="right"),
        box=None,
        padding=(0, 2, 0, 0),
        header_style="bold",
    )
    for r in rows:
        score = "-" if r["final_score"] is None else f"{r['final_score']:.4g}"
        score += f" {r['medal']}" if r["medal"] else ""
        table.add_row(
            r["id"],
            Text(visible(r["task"] or "")),
            Text(visible(_short_model(r["model"] or ""))),
            Text(visible(r["agent"] or "")),
            r["status"],
            score,
            cost_text(r["cost_usd"], r["cost_known"]),
        )
    console.print(table)
    total = sum(r["cost_usd"] or 0 for r in rows)
    unknown = sum(1 for r in rows if not r["cost_known"])
    more = f" (+ {unknown} of unknown cost)" if unknown else ""
    console.print(f"{len(rows)} session(s), total cost ${total:.4f}{more}", highlight=False)


def _short_model(model: str) -> str:
    """`replay:/long/path/a.jsonl` -> `replay:a.jsonl` (the path is in `sessions show`)."""
    kind, sep, target = model.partition(":")
    return f"{kind}:{Path(target).name}" if sep and kind in ("replay", "local") else model


@app.command("show")
def sessions_show(session_id: str, json_out: JsonOpt = False, home_dir: HomeOpt = None) -> None:
    """Steps, actions, scores and the plan's history of one session."""
    from ..core.session import error_line, score_text, session_report

    st = store(home_dir)
    report = session_report(st, session_id)
    if report is None:
        fail(f"no session {session_id!r} (see `mlagent sessions list`)", USAGE)
    tree = tree_report(st, session_id)
    if json_out:
        emit_json({**report, "search": tree} if tree else report)
        return
    print_session_fields(report["session"])
    print_segments(st, session_id)
    table = Table("step", "action", "ok", "observation")
    for s in report["steps"]:
        table.add_row(
            str(s["step"]),
            Text(visible(s["action"] or "")),  # the model's text: never read as markup
            "yes" if s["ok"] else "no",
            Text(  # program output: never read as markup
                visible(
                    error_line(s["observation"] or "")
                    if not s["ok"]
                    else (s["observation"] or "").strip().split("\n")[0][:80]
                )
            ),
        )
    console.print(table)
    for sc in report["scores"]:
        shown = score_text(sc["score"], bool(sc["valid"]), sc["medal"])
        shown += f" ({sc['error']})" if sc["error"] and not sc["valid"] else ""
        line = visible(f"step {sc['step']}: {sc['split']} {shown}")
        console.print(line, highlight=False, markup=False)
    console.print(f"plan versions: {len(report['plans'])}")
    if tree:
        print_tree(console, tree)


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
        fail(f"no session {session_id!r} (see `mlagent sessions list`)", USAGE)
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


app.command("delete")(sessions_delete)
app.command("prune")(sessions_prune)
