"""The search agent's events: the tree (nodes), the policy's choices, a person's steering and
the final selection. They are part of events.Payload, so the store keeps them and a replay or
a resume rebuilds the tree from them alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Operator = Literal["draft", "debug", "improve", "edit", "crossover"]
NodeStatus = Literal["running", "valid", "buggy", "timed_out"]


class NodeCreated(BaseModel):
    """A candidate the model wrote: its operator, parents, plan and script (not yet run)."""

    kind: Literal["node_created"] = "node_created"
    node: int
    parents: list[int] = Field(default_factory=list)
    operator: Operator
    form: Literal["whole", "edit", "starter"] = "whole"  # starter: the task's own, no model call
    plan: str = ""
    script: str = ""
    tokens: int = 0
    hints: list[str] = Field(default_factory=list)


class NodeStarted(BaseModel):
    """A node's script begins to run in its own workspace (a worker took it)."""

    kind: Literal["node_started"] = "node_started"
    node: int
    worker: int = 0


class NodeFinished(BaseModel):
    """A node ran: status, search score (the part of validation the search sees), its log."""

    kind: Literal["node_finished"] = "node_finished"
    node: int
    status: NodeStatus
    score: float | None = None
    output: str = ""
    error: str | None = None
    seconds: float = 0.0
    exec_start: float = 0.0  # wall clock (time.time) when its script started and ended
    exec_end: float = 0.0
    snapshot: str = ""  # the node's workspace snapshot name (fork --node restores it)
    overhead_ms: float = 0.0  # bookkeeping of this node: workspace copy, snapshot, events


class PolicyChoice(BaseModel):
    """Which parent(s) and operator the policy chose for the next node, and why."""

    kind: Literal["policy_choice"] = "policy_choice"
    policy: str
    node: int  # the node this choice creates
    operator: Operator
    parents: list[int] = Field(default_factory=list)
    reason: str = ""


class NodeExpandAsked(BaseModel):
    """A person asked that this node be expanded next (key x)."""

    kind: Literal["node_expand_asked"] = "node_expand_asked"
    node: int


class NodePinned(BaseModel):
    """Pinned: never dropped from the population (key p); pinned=False unpins."""

    kind: Literal["node_pinned"] = "node_pinned"
    node: int
    pinned: bool = True


class NodePruned(BaseModel):
    """A branch no policy expands any more (key k); its nodes stay candidates for the answer."""

    kind: Literal["node_pruned"] = "node_pruned"
    node: int


class NodeHint(BaseModel):
    """A person's hint attached to a node: it goes into the prompts of its children (key h)."""

    kind: Literal["node_hint"] = "node_hint"
    node: int
    text: str


class SelectionCandidate(BaseModel):
    node: int
    search_score: float | None = None
    hidden_score: float | None = None


class SelectionMade(BaseModel):
    """The final pick: by the hidden part of validation (or by validation where the task's
    rows cannot be split), with the scores that make the selection gap visible."""

    kind: Literal["selection_made"] = "selection_made"
    node: int | None
    by: Literal["hidden", "validation", "none"]
    hidden_split: bool
    candidates: list[SelectionCandidate] = Field(default_factory=list)
    search_score: float | None = None
    hidden_score: float | None = None
    test_score: float | None = None
    validation_node: int | None = None  # the node validation alone would have chosen
    validation_test_score: float | None = None
    note: str = ""


SEARCH_PAYLOADS = (
    NodeCreated,
    NodeStarted,
    NodeFinished,
    PolicyChoice,
    NodeExpandAsked,
    NodePinned,
    NodePruned,
    NodeHint,
    SelectionMade,
)
