"""`mlagent`, the command line: main.py assembles the typer app from one module per family."""

from .main import app

__all__ = ["app"]
