"""`mlagent-train`: RL fine-tuning of the local model from logged sessions (coming next)."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="mlagent-train: fine-tune the local model with RL from the sessions mlagent logged. "
    "Not built yet: this release only answers --help.",
    add_completion=False,
    no_args_is_help=True,
)


@app.callback()
def main_callback() -> None:
    """mlagent-train: fine-tune the local model with RL from the sessions mlagent logged."""


@app.command("status")
def status() -> None:
    """Say what the trainer can do in this release."""
    typer.echo("mlagent-train is not built yet; see the README for what is coming.")


def main() -> None:
    app()
