"""The vocabulary procedural tasks draw from: plausible domains, their columns and targets.

The order of DOMAINS is part of what a seed means: append new domains, never reorder.
"""

from __future__ import annotations

from . import nature, people, things
from .kinds import Binary, Cat, Domain, Family, Multi, Num, Reg

DOMAINS: tuple[Domain, ...] = (*people.DOMAINS, *nature.DOMAINS, *things.DOMAINS)

__all__ = ["DOMAINS", "Binary", "Cat", "Domain", "Family", "Multi", "Num", "Reg"]
