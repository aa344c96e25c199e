"""The agents, their actions, prompts, response parsing (and its grammar) and memory."""

from .agents import FORMAT_REMINDER, SOLVE_REMINDER, Agent, AgentState, make_agent
from .calls import call_model
from .memory import Memory, Note
from .parsing import ParsedResponse, ResponseParseError, parse_response, parse_solve_response
from .prompts import StepRecord, cut_middle

__all__ = [
    "FORMAT_REMINDER",
    "SOLVE_REMINDER",
    "Agent",
    "AgentState",
    "Memory",
    "Note",
    "ParsedResponse",
    "ResponseParseError",
    "StepRecord",
    "call_model",
    "cut_middle",
    "make_agent",
    "parse_response",
    "parse_solve_response",
]
