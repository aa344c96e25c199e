"""`mlagent-train export`: a run's LoRA merged into a GGUF."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from .app import (
    JsonOpt,
    app,
    console,
    emit_json,
    err,
    fail,
)


@app.command("export")
def export_cmd(
    run: Annotated[Path, typer.Option("--run", help="A run folder or a checkpoint folder.")],
    to: Annotated[Path, typer.Option("--to", help="The GGUF file to write.")],
    quant: Annotated[str, typer.Option("--quant", help="q8_0 | f16 | f32 ...")] = "q8_0",
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Load it back with llama.cpp and compare.")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Merge a run's LoRA into its base and write a GGUF that `mlagent --model local:FILE` runs."""
    from trainer.recipes import CheckpointError, latest_checkpoint

    try:
        checkpoint = latest_checkpoint(run)
    except CheckpointError as exc:
        fail(str(exc))
    if checkpoint is None:
        fail(f"{run} has no checkpoint (is it a run folder written by mlagent-train run?)")
    with warnings.catch_warnings():  # the libraries' notes on their own APIs, not the person's
        warnings.simplefilter("ignore", FutureWarning)
        from trainer.export import ExportError, export_gguf

        try:
            report = export_gguf(checkpoint, to, quant=quant, verify=verify)
        except (ExportError, ValueError, FileNotFoundError, RuntimeError) as exc:
            fail(str(exc))
    from trainer.provenance import ProvenanceError, TrainingData

    try:  # the GGUF carries what it learnt from, so `eval --model local:FILE` knows
        TrainingData.load(checkpoint).save_sidecar(to)
    except ProvenanceError:
        err.print(f"note: {run} has no training-data record; eval cannot check held-out tasks")
    if as_json:
        emit_json({**report.model_dump(), "checkpoint": str(checkpoint)})
        return
    console.print(
        f"wrote {report.out} ({report.quant}, {report.size_bytes / 1e6:.1f} MB) from {checkpoint}; "
        f"llama.cpp greedy match: {report.greedy_match}",
        highlight=False,
    )
