"""Package attributes loaded on first use, so importing a package stays cheap.

A package's `__init__` lists which module defines each public name; the module (and whatever
heavy library it pulls in: docker, matplotlib, gymnasium, llama.cpp) loads only when a caller
first touches one of its names.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module


def lazy_exports(package: str, module_of: dict[str, str]) -> Callable[[str], object]:
    """A module-level `__getattr__` for `package` that imports `.module_of[name]` on demand."""

    def __getattr__(name: str) -> object:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module_of[name]}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
