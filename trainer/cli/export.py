"""`mlagent-train export`: a run's LoRA merged into a GGUF."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator
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


@contextlib.contextmanager
def library_notes_hidden() -> Iterator[None]:
    """Hide what torch and transformers say about their own APIs' future (FutureWarning, the
    `past_key_values` deprecation in transformers' log): notes for their callers' authors, not
    for the person exporting."""
    logger = logging.getLogger("transformers")  # where transformers is loaded already
    level = logger.level
    logger.setLevel(logging.ERROR)
    unset = "TRANSFORMERS_VERBOSITY" not in os.environ  # read when transformers loads
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        logger.setLevel(level)
        if unset:
            os.environ.pop("TRANSFORMERS_VERBOSITY", None)


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
    with library_notes_hidden():
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
