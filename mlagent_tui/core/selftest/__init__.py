"""`mlagent sandbox check`: hostile probes of a sandbox backend.

It sits above both `sandbox` (what it probes) and `tasks` (a real grader it attacks), so
neither of those imports the other for it. Each module holds the probes of one class of
attack; `run_selftest` runs them all against a fresh workspace laid out like a session's.
"""

from __future__ import annotations

from .basic import Probe, SelfTest, run_selftest

__all__ = ["Probe", "SelfTest", "run_selftest"]
