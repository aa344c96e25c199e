"""`mlagent run | resume | fork`: sessions without a screen, with a live progress line."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..core.safe_text import visible
from .api_options import ApiBaseOpt, ApiKeyEnvOpt, PriceInOpt, PriceOutOpt, api_model_options
from .budgets import (
    FORK_BUDGET_HELP,
    RESUME_BUDGET_HELP,
    MaxCostOpt,
    MaxMinutesOpt,
    MaxStepsOpt,
    MaxTokensOpt,
    StuckAfterOpt,
)
from .exits import EXIT_CODES_HELP, FAILED, USAGE, interrupt_code, session_exit_code
from .exits import signals_interrupt as _signals_interrupt
from .options import (
    HomeOpt,
    JsonOpt,
    TaskDirOpt,
    console,
    emit_json,
    err,
    error_line,
    errors,
    fail,
    home,
    store,
)
from .search_view import MaxNodesOpt, NodeOpt, PolicyOpt, StarterOpt, WorkersOpt, node_line

app = typer.Typer()

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        help="local (SmolLM2 + the shipped adapter) | smollm2 (bare) | local:PATH.gguf | "
        "replay:PATH.jsonl | a litellm id (openai/gpt-4o, ...)",
    ),
]
AgentOpt = Annotated[str, typer.Option("--agent", help="research | solve | search")]
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
            f"{visible(s.task.name)} | step {s.completed + 1}/{s.max_steps} | ",
            (self.action, "cyan"),
            f" | best {best} (baseline {s.task.spec.baseline.score:.4g})",
            f" | tokens {'~' * s.tokens_estimated}{s.tokens_in + s.tokens_out}",
            f" | ${s.cost_usd:.4f}" if s.cost_known else " | cost unknown",
            ("\n  " + self.last_line[:100], "dim") if self.last_line else "",
        )

    def __call__(self, event: Any) -> None:
        p = event.payload
        if p.kind == "agent_response":
            self.action = visible(p.action or "") or "(unparsed response)"  # the model's text
        elif p.kind == "exec_output" and p.lines:
            self.last_line = visible(p.lines[-1])  # the program's output
        elif p.kind == "action_finished":
            line = step_line(event.step, p)  # one line whatever the width: never cut
            self.live.console.print(line, highlight=False, markup=False, soft_wrap=True)
            self.action, self.last_line = "thinking", ""
        elif p.kind in ("policy_choice", "node_finished", "selection_made"):
            line = node_line(p)  # the search agent's tree, one line per choice and node
            self.live.console.print(line, highlight=False, markup=False, soft_wrap=True)
        self.live.update(self.render())


def step_line(step: int, p: Any) -> str:
    """A finished step, one line: an error's message in full (it is what the person needs),
    the first line of a success cut to fit; the action and its output as visible text."""
    from ..core.session import error_line

    if not p.ok:
        return visible(f"step {step}: {p.action} [error] {error_line(p.observation)}")
    first = p.observation.strip().splitlines()[:1]
    return visible(f"step {step}: {p.action} [ok] {first[0][:90] if first else ''}")


def terminal_approver(response: Any) -> Any:
    from ..core.session import Approval

    err.print(
        f"[bold yellow]approve?[/] {escape(visible(response.action))} "
        f"{escape(json.dumps(response.action_input)[:200])}",
        highlight=False,
    )
    answer = typer.prompt("y = yes, n = no", default="y", err=True).strip().lower()
    if answer.startswith("y"):
        return Approval(approved=True)
    return Approval(
        approved=False, reason=typer.prompt("reason (the model sees it)", default="", err=True)
    )


def loaded_model(config: Any) -> Any:
    """The session's model, its task and the model checked first (a bad one is one line), then
    a line saying it loads: a local model takes up to a minute before anything else shows."""
    from ..core.llm import check_model, make_model
    from ..core.tasks import find_task

    find_task(config.task, config.task_dir)
    check_model(config.model, max_cost=config.max_cost, **config.model_options)
    line = f"loading the model {visible(config.model)} ..."
    err.print(line, highlight=False, markup=False, soft_wrap=True)
    return make_model(config.model, **config.model_options)


def announce_steps(session: Any, progress: Progress) -> None:
    """A line as each step starts (the model may think a minute before the step's own line):
    the session's step runner, wrapped for this process only."""
    step = session.run_step

    def run_step() -> None:
        line = f"step {session.completed + 1}: started (the model is thinking)"
        progress.live.console.print(line, highlight=False, markup=False, soft_wrap=True)
        step()

    session.run_step = run_step


def drive(session: Any, json_out: bool) -> None:
    """Run a session with a live view; print the result (one JSON object with --json)."""
    if session.approval != "auto":
        if not sys.stdin.isatty():
            fail("--approval confirm-* needs a terminal to ask you; use --approval auto", USAGE)
        session.approver = terminal_approver
    progress = Progress(session, err)
    session.subscribe(progress)
    announce_steps(session, progress)
    try:
        with _signals_interrupt(), progress.live:
            result = session.run()
    except KeyboardInterrupt as exc:  # the session has recorded its end as `interrupted`
        if json_out:
            emit_json(session.result().model_dump())
        err.print(f"interrupted; resume with: mlagent resume {session.id}", highlight=False)
        raise typer.Exit(interrupt_code(exc)) from None
    code = session_exit_code(result)
    if json_out:
        emit_json(result.model_dump())
        raise typer.Exit(code)
    table = Table(show_header=False, box=None)
    for key, value in result.model_dump().items():
        shown = Text("-" if value is None else visible(str(value)))  # never read as markup
        table.add_row(key, shown, style="red" * (key == "why"))
    console.print(table)
    raise typer.Exit(code)


def start_failed(exc: Exception) -> None:
    """A session that could not start: a usage error (nothing ran), unless setting it up failed
    after it was recorded (then it is stored, ended `failed`)."""
    from ..core.session import SessionSetupError

    fail(error_line(exc), FAILED if isinstance(exc, SessionSetupError) else USAGE)


def refuse_model_typo(model: str | None) -> None:
    """A typo'd or malformed --model, refused before the session's modules (and litellm) load:
    the one line comes at once (the full check runs when the session is created)."""
    from ..core.llm import ModelError
    from ..core.llm.check import refuse_malformed

    try:
        if model is not None:
            refuse_malformed(model)
    except ModelError as exc:
        fail(str(exc), USAGE)


@app.command("run", epilog=EXIT_CODES_HELP)
def run(
    task: Annotated[str | None, typer.Option("--task", help="A bundled task.")] = None,
    task_dir: TaskDirOpt = None,
    model: ModelOpt = "local",
    agent: AgentOpt = "research",
    sandbox: Annotated[str, typer.Option("--sandbox", help="local | docker")] = "local",
    max_steps: MaxStepsOpt = None,
    max_minutes: MaxMinutesOpt = None,
    max_cost: MaxCostOpt = None,
    max_tokens: MaxTokensOpt = None,
    stuck_after: StuckAfterOpt = 5,
    approval: ApprovalOpt = "auto",
    seed: Annotated[int, typer.Option(help="Data seed.")] = 0,
    policy: PolicyOpt = "greedy",
    workers: WorkersOpt = 2,
    max_nodes: MaxNodesOpt = None,
    starter: StarterOpt = True,
    api_base: ApiBaseOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    price_in: PriceInOpt = None,
    price_out: PriceOutOpt = None,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Run an agent on a task headless, with a live progress line."""
    refuse_model_typo(model)
    from ..core.session import Session, SessionConfig

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
            stuck_after=stuck_after,
            approval=approval,
            seed=seed,
            model_options=api_model_options(api_base, api_key_env, price_in, price_out),
            policy=policy,
            workers=workers,
            max_nodes=max_nodes,
            from_starter=starter,
            solve_starter=starter,
        )
        session = Session.create(home(home_dir), store(), config, model=loaded_model(config))
    except errors() as exc:
        start_failed(exc)
    drive(session, json_out)


@app.command("resume", epilog=f"{RESUME_BUDGET_HELP} {EXIT_CODES_HELP}")
def resume(
    session_id: Annotated[str, typer.Argument(help="The session to continue.")],
    max_steps: MaxStepsOpt = None,
    max_minutes: MaxMinutesOpt = None,
    max_cost: MaxCostOpt = None,
    max_tokens: MaxTokensOpt = None,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Continue a session from its last completed step (same workspace and memory)."""
    from ..core.session import BudgetLimits, Session

    limits = BudgetLimits(
        max_steps=max_steps, max_minutes=max_minutes, max_cost=max_cost, max_tokens=max_tokens
    )
    try:
        session = Session.resume(
            home(home_dir), store(), session_id, limits=limits, ended_needs_budget=True
        )
    except errors() as exc:
        start_failed(exc)
    drive(session, json_out)


@app.command("fork", epilog=f"{FORK_BUDGET_HELP} {EXIT_CODES_HELP}")
def fork(
    session_id: Annotated[str, typer.Argument(help="The session to fork.")],
    step: Annotated[
        int | None, typer.Option("--step", help="Start from the state after this step.")
    ] = None,
    node: NodeOpt = None,
    model: Annotated[str | None, typer.Option("--model", help="Default: the parent's.")] = None,
    max_steps: MaxStepsOpt = None,
    max_minutes: MaxMinutesOpt = None,
    max_cost: MaxCostOpt = None,
    max_tokens: MaxTokensOpt = None,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Start a new session from the state after step K (or node N of a search) of another."""
    refuse_model_typo(model)
    from ..core.session import Session, fork_node

    if (step is None) == (node is None):
        fail("give one of --step K or --node N (a node of a search session)", USAGE)
    try:
        session = (fork_node if node is not None else Session.fork)(
            home(home_dir),
            store(),
            session_id,
            node if node is not None else step,
            model_spec=model,
            max_steps=max_steps,
            max_minutes=max_minutes,
            max_cost=max_cost,
            max_tokens=max_tokens,
        )
    except errors() as exc:
        start_failed(exc)
    drive(session, json_out)
