"""The event spine: every thing a session does is one of these, appended to the store in order.

Payloads are a discriminated union on `kind`, so a stored row reads back as its exact type.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from .search_events import (
    NodeCreated,
    NodeExpandAsked,
    NodeFinished,
    NodeHint,
    NodePinned,
    NodePruned,
    NodeStarted,
    PolicyChoice,
    SelectionMade,
)

MAX_TEXT_CHARS = 1_000_000
_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_NESTING = 40


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte smuggled in by surrogateescape (a non-UTF-8 name)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def clean_text(text: str, limit: int | None = MAX_TEXT_CHARS) -> str:
    """`text` as valid UTF-8 and not enormous; the same object when it already is.

    A lone surrogate (from a model, or a non-UTF-8 file name) reads as an escape (\\xff,
    \\ud800); past `limit` characters the middle is cut, with a note saying how much.
    """
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(_escape, text)
    if limit is not None and len(text) > limit:
        half = limit // 2
        text = f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"
    return text


def _clean(value: Any, depth: int = 0) -> Any:
    """A JSON-like value with every string cleaned; the same object when nothing changed."""
    if isinstance(value, str):
        return clean_text(value)
    if depth > _MAX_NESTING and isinstance(value, dict | list | tuple):
        return clean_text(repr(value)[:10_000])
    if isinstance(value, dict):
        items = [(_clean(k, depth + 1), _clean(v, depth + 1)) for k, v in value.items()]
        same = all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True))
        return value if same else dict(items)
    if isinstance(value, list | tuple):
        new = [_clean(v, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(new, value, strict=True)) else type(value)(new)
    return value


def clean_payload(payload: BaseModel) -> BaseModel:
    """A payload the store can always write: every text valid UTF-8 and capped in size."""
    updates = {}
    for name, value in payload:
        new = _clean(value)
        if new is not value:
            updates[name] = new
    return payload.model_copy(update=updates) if updates else payload


class SessionStarted(BaseModel):
    kind: Literal["session_started"] = "session_started"
    task: str
    model: str = ""
    agent: str = ""
    sandbox: str = "local"
    workspace: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    parent_session_id: str | None = None
    parent_step: int | None = None


class LLMCall(BaseModel):
    kind: Literal["llm_call"] = "llm_call"
    model: str
    purpose: str = "step"
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False: the model has no known price (cost_usd 0 means unknown)
    tokens_estimated: bool = False  # the backend reported no usage: counts estimated from text
    latency_s: float = 0.0
    text: str = ""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None


class AgentResponse(BaseModel):
    kind: Literal["agent_response"] = "agent_response"
    reflection: str = ""
    plan: str = ""
    fact_check: str = ""
    thought: str = ""
    action: str
    action_input: dict[str, Any] = Field(default_factory=dict)
    raw: str = ""


class ParseError(BaseModel):
    kind: Literal["parse_error"] = "parse_error"
    error: str
    raw: str = ""
    attempt: int = 1


class ActionStarted(BaseModel):
    kind: Literal["action_started"] = "action_started"
    action: str
    action_input: dict[str, Any] = Field(default_factory=dict)


class ActionFinished(BaseModel):
    """The observation of a step's action; its arrival marks the step as completed."""

    kind: Literal["action_finished"] = "action_finished"
    action: str
    observation: str
    ok: bool = True
    duration_s: float = 0.0


class ExecOutput(BaseModel):
    kind: Literal["exec_output"] = "exec_output"
    lines: list[str]
    stream: str = "stdout"


class ExecFinished(BaseModel):
    kind: Literal["exec_finished"] = "exec_finished"
    command: str
    exit_code: int | None
    duration_s: float
    peak_rss_mb: float = 0.0
    timed_out: bool = False
    killed_reason: str | None = None
    output_truncated: bool = False

    @classmethod
    def of(cls, result: BaseModel) -> ExecFinished:
        """The event for an executor's ExecResult (everything but its output)."""
        return cls.model_validate(result.model_dump(include=set(cls.model_fields) - {"kind"}))


class FileChanged(BaseModel):
    kind: Literal["file_changed"] = "file_changed"
    path: str
    before_hash: str | None
    after_hash: str | None
    diff: str = ""
    author: str = "agent"


class FileChangesSummarized(BaseModel):
    """The files a step changed past the bound on FileChanged events per step: counted, not
    listed (a step that makes 100k files must not cost the store 100k events)."""

    kind: Literal["file_changes_summarized"] = "file_changes_summarized"
    added: int = 0
    changed: int = 0
    removed: int = 0
    examples: list[str] = Field(default_factory=list)


class ScoreRecorded(BaseModel):
    kind: Literal["score_recorded"] = "score_recorded"
    split: Literal["validate", "submit", "baseline"]
    score: float | None
    valid: bool
    error: str | None = None
    medal: str | None = None
    above_median: bool = False


class PlanEdited(BaseModel):
    kind: Literal["plan_edited"] = "plan_edited"
    author: Literal["agent", "human"]
    plan: str


class HintGiven(BaseModel):
    kind: Literal["hint_given"] = "hint_given"
    text: str


class ApprovalAsked(BaseModel):
    kind: Literal["approval_asked"] = "approval_asked"
    action: str
    action_input: dict[str, Any] = Field(default_factory=dict)


class ApprovalGiven(BaseModel):
    kind: Literal["approval_given"] = "approval_given"
    approved: bool
    reason: str = ""


class ApprovalModeChanged(BaseModel):
    kind: Literal["approval_mode_changed"] = "approval_mode_changed"
    mode: Literal["auto", "confirm-exec", "confirm-all"]


class Paused(BaseModel):
    kind: Literal["paused"] = "paused"


class Resumed(BaseModel):
    kind: Literal["resumed"] = "resumed"
    # `mlagent resume --max-steps ...`: the new budgets and where they count from
    budget: dict[str, Any] | None = None


class SessionEnded(BaseModel):
    kind: Literal["session_ended"] = "session_ended"
    reason: str
    status: Literal["finished", "failed", "stopped", "budget", "interrupted"] = "finished"
    final_score: float | None = None
    valid: bool = False
    medal: str | None = None


Payload = Annotated[
    SessionStarted
    | LLMCall
    | AgentResponse
    | ParseError
    | ActionStarted
    | ActionFinished
    | ExecOutput
    | ExecFinished
    | FileChanged
    | FileChangesSummarized
    | ScoreRecorded
    | PlanEdited
    | HintGiven
    | ApprovalAsked
    | ApprovalGiven
    | ApprovalModeChanged
    | Paused
    | Resumed
    | SessionEnded
    | NodeCreated
    | NodeStarted
    | NodeFinished
    | PolicyChoice
    | NodeExpandAsked
    | NodePinned
    | NodePruned
    | NodeHint
    | SelectionMade,
    Field(discriminator="kind"),
]
PAYLOAD_ADAPTER: TypeAdapter[Payload] = TypeAdapter(Payload)


class Event(BaseModel):
    """One row of the spine: who (session), when (seq, ts), where (step), what (payload)."""

    session_id: str
    seq: int
    ts: float
    step: int = 0
    payload: Payload

    @property
    def kind(self) -> str:
        return self.payload.kind


Listener = Callable[[Event], None]


class EventBus:
    """In-process publish/subscribe; the store and the TUI are both subscribers."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self, event: Event) -> None:
        for listener in list(self._listeners):
            listener(event)


def now() -> float:
    return time.time()


class Recorder:
    """Stamps payloads with the session id, the next seq and the current step, then publishes.

    Publishing goes through the bus, so the store (a subscriber) has the event on disk before
    `emit` returns; a recorder resumed after a crash continues at `start_seq`.
    """

    def __init__(self, session_id: str, bus: EventBus, start_seq: int = 1, step: int = 0) -> None:
        self.session_id = session_id
        self.bus = bus
        self.seq = start_seq
        self.step = step
        self._lock = threading.RLock()

    def emit(self, payload: BaseModel, step: int | None = None) -> Event:
        """Record one payload; `step` overrides the current step (for a person's actions)."""
        with self._lock:
            event = Event(
                session_id=self.session_id,
                seq=self.seq,
                ts=now(),
                step=self.step if step is None else step,
                payload=clean_payload(payload),
            )
            self.seq += 1
            self.bus.publish(event)
        return event


OUTPUT_BATCH_LINES = 50


class LineBatcher:
    """Groups streamed lines into ExecOutput events so a chatty script is not 1 event per line.

    A line after a quiet spell goes out at once; a burst is sent every `interval_s` (a timer
    flushes what is pending, so the last lines before a long silence are never held back).
    """

    def __init__(
        self,
        recorder: Recorder,
        echo: Callable[[str], None] | None = None,
        interval_s: float = 0.25,
    ) -> None:
        self.recorder = recorder
        self.echo = echo
        self.interval_s = interval_s
        self.lines: list[str] = []
        self.last_flush = 0.0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __call__(self, line: str) -> None:
        if self.echo:
            self.echo(line)
        with self._lock:
            self.lines.append(line)
            due = time.monotonic() - self.last_flush >= self.interval_s
            if due or len(self.lines) >= OUTPUT_BATCH_LINES:
                self._flush_locked()
            elif self._timer is None:
                self._timer = threading.Timer(self.interval_s, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.lines:
            self.recorder.emit(ExecOutput(lines=self.lines))
            self.lines = []
        self.last_flush = time.monotonic()
