"""The two agents: `research` (MLAgentBench's research agent) and `solve` (AIDE/AceGRPO loop).

An agent turns the session's state into one AgentResponse; the session executes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from ..events import AgentResponse, ParseError, clean_text
from ..llm import ChatModel, TokenCallback
from ..tasks import Task
from .actions import SOLUTION_FILE, visible_actions
from .calls import call_model
from .memory import Memory
from .menu import MENU_FORMAT, apply_choice, menu_grammar, with_menu
from .parsing import (
    ResponseParseError,
    parse_response,
    parse_solve_response,
    response_grammar,
    response_max_tokens,
    solve_grammar,
)
from .prompts import StepRecord, research_messages, score_line, solve_messages
from .solve_edit import EditPlan, plan_edit
from .tweak import VALUE_FORMAT, apply_value, describe, tweak_grammar

MAX_PARSE_RETRIES = 3
GRAMMAR_MAX_TOKENS = 2048
SOLVE_REMINDER = (
    "Your response could not be parsed: {error}. Respond with 'Plan:' and one ```python block."
)
EDIT_REMINDER = "Your response could not be used: {error}.\n" + MENU_FORMAT
VALUE_REMINDER = "Your response could not be used: {error}.\n" + VALUE_FORMAT
EDIT_MAX_TOKENS = 200  # a setting number, a plan sentence and a value
FORMAT_REMINDER = (
    "Your response could not be parsed: {error}\nRespond again, in exactly the format: "
    "Reflection, Research Plan and Status, Fact Check, Thought, Action, Action Input (JSON)."
)


@dataclass
class AgentState:
    task: Task
    step: int
    plan: str = ""
    memory: Memory = field(default_factory=Memory)
    hints: list[str] = field(default_factory=list)
    history: list[StepRecord] = field(default_factory=list)
    previous_script: str | None = None
    preview: str = ""  # the solve agent's view of the prepared folder (core.tasks.preview)
    starter: str | None = None  # the solve agent's first step, where it starts from the starter
    edits: bool = False  # the solve agent improves by one edit of its best script (solve_edit)
    columns: list[str] = field(default_factory=list)  # the data's columns an edit may add
    menu: bool = True  # the model chooses an edit's setting (False: drawn by `seed`, as before)
    seed: int = 0
    record: Callable[[BaseModel], Any] = lambda payload: None
    on_token: TokenCallback | None = None


class Agent(Protocol):
    name: str

    def step(self, state: AgentState) -> AgentResponse: ...


class ResearchAgent:
    name = "research"

    def __init__(
        self,
        model: ChatModel,
        *,
        k_recent: int = 3,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        observation_limit: int = 3_000,
    ) -> None:
        self.model = model
        self.k_recent = k_recent
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.observation_limit = observation_limit
        self.actions = visible_actions()
        specs = [(a.name, a.input_model) for a in self.actions]
        self.grammar = response_grammar(specs) if model.supports_grammar else None
        if self.grammar is not None:
            # A small model may write long sections; give the grammar room to finish.
            self.max_tokens = max(max_tokens, min(response_max_tokens(specs), GRAMMAR_MAX_TOKENS))
        self.known = [a.name for a in self.actions]

    def messages(self, state: AgentState) -> list[dict[str, str]]:
        return research_messages(
            actions=self.actions,
            problem=state.task.description,
            submission=state.task.spec.submission.file,
            plan=state.plan,
            memory_summary=state.memory.summary(),
            hints=state.hints,
            history=state.history,
            k_recent=self.k_recent,
            observation_limit=self.observation_limit,
        )

    def step(self, state: AgentState) -> AgentResponse:
        def build(text: str) -> AgentResponse:
            parsed = parse_response(text, known_actions=self.known)
            return AgentResponse(
                reflection=parsed.reflection,
                plan=parsed.plan,
                fact_check=parsed.fact_check,
                thought=parsed.thought,
                action=parsed.action,
                action_input=parsed.action_input,
                raw=text,
            )

        return ask_until_parsed(self, state, self.messages(state), build, FORMAT_REMINDER)


class SolveAgent:
    name = "solve"

    def __init__(
        self,
        model: ChatModel,
        *,
        max_tokens: int = 2048,
        temperature: float = 0.7,
        observation_limit: int = 3_000,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.observation_limit = observation_limit
        self.grammar = solve_grammar() if model.supports_grammar else None

    @staticmethod
    def mode(history: list[StepRecord]) -> str:
        runs = [r for r in history if r.action == "Run Solution"]
        if not runs:
            return "draft"
        return "improve" if runs[-1].ok else "debug"

    def step(self, state: AgentState) -> AgentResponse:
        if state.starter is not None and not state.history:
            return starter_response(state.starter)
        mode = self.mode(state.history)
        higher = state.task.spec.metric.higher_is_better
        edit = None
        if state.edits:
            edit = plan_edit(state.history, state.columns, higher, menu=state.menu, seed=state.seed)
        if edit is not None:
            return self._edit(state, edit)
        runs = [r for r in state.history if r.action == "Run Solution"]
        last = runs[-1] if runs else None
        score = last.observation.rsplit("Validation: ", 1)[-1] if last and last.ok else None
        messages = solve_messages(
            problem=state.task.description,
            submission=state.task.spec.submission.file,
            mode=mode,
            previous_script=state.previous_script if last else None,
            previous_output=last.observation if last and not last.ok else None,
            previous_score=score,
            hints=state.hints,
            observation_limit=self.observation_limit,
            preview=state.preview,
        )

        def build(text: str) -> AgentResponse:
            plan, script = parse_solve_response(text)
            return AgentResponse(
                plan=plan,
                thought=f"{mode}: write {SOLUTION_FILE}, run it and validate",
                action="Run Solution",
                action_input={"content": script},
                raw=text,
            )

        return ask_until_parsed(self, state, messages, build, SOLVE_REMINDER)

    def _edit(self, state: AgentState, edit: EditPlan) -> AgentResponse:
        """Ask which setting of the best valid script to change, and to what (solve_edit.py)."""
        spec = state.task.spec
        score = score_line(spec.metric.name, edit.base.score or 0.0, spec.metric.higher_is_better)
        messages = solve_messages(
            problem=state.task.description,
            submission=spec.submission.file,
            mode="improve",
            previous_script=edit.base.script,
            previous_output=None,
            previous_score=score,
            hints=state.hints,
            observation_limit=self.observation_limit,
            preview=state.preview,
        )
        if edit.choose:
            messages = with_menu(messages, edit.menu)
            grammar = menu_grammar(edit.menu, state.columns)
            reminder = EDIT_REMINDER
        else:  # the setting drawn for the model (a session stored before the menu)
            messages[-1]["content"] += f"\n\n{describe(edit.menu[0])}\n{VALUE_FORMAT}"
            grammar, reminder = tweak_grammar(edit.menu[0], state.columns), VALUE_REMINDER

        def build(text: str) -> AgentResponse:
            if edit.choose:
                plan, script, focus = apply_choice(text, edit.base.script, edit.menu, state.columns)
            else:
                focus = edit.menu[0]
                plan, script = apply_value(text, edit.base.script, focus)
            return AgentResponse(
                plan=plan,
                thought=f"improve: change {focus.text[:60]} in step {edit.base.step}'s "
                f"script ({score})",
                action="Run Solution",
                action_input={"content": script},
                raw=text,
            )

        return ask_until_parsed(
            self,
            state,
            messages,
            build,
            reminder,
            grammar=grammar if self.model.supports_grammar else None,
            max_tokens=EDIT_MAX_TOKENS,
        )


def starter_response(script: str) -> AgentResponse:
    """The first step of a solve session that starts from the task's starter: no model call.
    The small model's own drafts often do not run; its improvements of a running script do."""
    return AgentResponse(
        plan="Run the task's starter script as given: a valid first solution to improve.",
        thought=f"draft: the task's starter as {SOLUTION_FILE}, run it and validate",
        action="Run Solution",
        action_input={"content": script},
    )


def ask_until_parsed(
    agent: ResearchAgent | SolveAgent,
    state: AgentState,
    messages: list[dict[str, str]],
    build: Callable[[str], AgentResponse],
    reminder: str,
    *,
    grammar: str | None = None,
    max_tokens: int | None = None,
) -> AgentResponse:
    """Call the model; on a parse error show it the error and ask again, up to 3 times.

    Each failure is recorded as a ParseError; after the last one an AgentResponse with no
    action comes back, which the session turns into a failed step the model is told about.
    """
    text = ""
    for attempt in range(1, MAX_PARSE_RETRIES + 1):
        out = call_model(
            agent.model,
            messages,
            state.record,
            purpose="step",
            grammar=grammar or agent.grammar,
            max_tokens=max_tokens or agent.max_tokens,
            temperature=agent.temperature,
            on_token=state.on_token,
        )
        text = clean_text(out.text, limit=None)  # a lone surrogate becomes a visible escape
        try:
            return build(text)
        except ResponseParseError as exc:
            state.record(ParseError(error=str(exc), raw=text, attempt=attempt))
            messages = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": reminder.format(error=exc)},
            ]
    return AgentResponse(action="", raw=text)


def make_agent(name: str, model: ChatModel, **options: Any) -> Agent:
    if name == "research":
        return ResearchAgent(model, **options)
    if name == "solve":
        return SolveAgent(model, **options)
    raise ValueError(f"unknown agent {name!r} (research | solve)")
