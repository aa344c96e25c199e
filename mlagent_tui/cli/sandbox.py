"""`mlagent sandbox ...`: sandboxed execution (run a command, build the image, self-check)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..core.safe_text import visible
from .options import JsonOpt, console, emit_json, err, fail

app = typer.Typer(help="Sandboxed execution.", no_args_is_help=True)


@app.command("run", context_settings={"allow_interspersed_args": False})
def sandbox_run(
    command: Annotated[list[str], typer.Argument(help="The command, after --.")],
    workspace: Annotated[Path, typer.Option("--workspace", help="Working folder.")] = ...,
    backend: Annotated[str, typer.Option("--backend", help="local | docker")] = "local",
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds.")] = 60.0,
    mem_mb: Annotated[int, typer.Option("--mem-mb", help="Memory limit.")] = 1024,
    json_out: JsonOpt = False,
) -> None:
    """Run one command in the sandbox: exit code, duration, peak memory, why it was killed."""
    from ..core.sandbox import ImageError, make_executor

    if not workspace.is_dir():
        fail(f"workspace does not exist: {workspace}")
    echo = (
        None
        if json_out
        else (lambda line: console.print(visible(line), markup=False, highlight=False))
    )  # the program's output: shown, never obeyed
    try:
        executor = make_executor(backend, workspace=workspace, mem_mb=mem_mb)
    except (ImageError, ValueError, RuntimeError) as exc:
        fail(str(exc))
    try:
        res = executor.run(command, cwd=workspace, timeout_s=timeout, mem_mb=mem_mb, on_output=echo)
    finally:
        executor.close()
    summary = res.model_dump(exclude={"output"})
    if json_out:
        emit_json(summary)
    else:
        err.print(summary)
    raise typer.Exit(0 if res.ok else 1)


@app.command("build")
def sandbox_build(
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Build from a Debian root file system (debootstrap) instead of a registry.",
        ),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if it exists.")] = False,
) -> None:
    """Build the docker sandbox image (mlagent-sandbox:latest)."""
    from ..core.sandbox import IMAGE, ImageError, build_image, image_exists

    try:
        if image_exists() and not force:
            console.print(f"{IMAGE} already built (use --force to rebuild)")
            return
        tag = build_image(offline=offline, log=lambda m: err.print(f"[dim]{m}[/]"))
    except ImageError as exc:
        fail(str(exc))
    console.print(f"built {tag}")


@app.command("check")
def sandbox_check(
    backend: Annotated[list[str] | None, typer.Option("--backend", help="Default: both.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Self-test of isolation: network, private files, writes outside, limits, time-outs."""
    from ..core.selftest import run_selftest

    results = {b: run_selftest(b) for b in (backend or ["local", "docker"])}
    ok = all(r.ok for r in results.values())
    if json_out:
        emit_json({"ok": ok, "backends": {b: r.model_dump() for b, r in results.items()}})
    else:
        for b, r in results.items():
            console.print(
                f"[bold]{b}[/] ({r.isolation}): {'[green]ok' if r.ok else '[red]FAIL'}[/]"
            )
            for probe in r.probes:
                sign = "[green]✓[/]" if probe.ok else "[red]✗[/]"
                shown = escape(visible(probe.detail))  # what a hostile command printed
                console.print(f"   {sign} {probe.name} [dim]{shown}[/]", highlight=False)
    raise typer.Exit(0 if ok else 1)
