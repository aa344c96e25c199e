"""Running a script instrumented by structure, without the program or its reader ever seeing it.

An Executor wrapper: `python X.py` runs a structurally instrumented copy of X.py (a fresh nonce
per execution), the markers are taken out of the output before anyone sees it (the store, the
agent's observation), and a ProgressReport per execution says how far the program got. The
workspace keeps the agent's own X.py, so the session stores and shows the original program.

How the nonce stays out of the program's reach: a fixed bootstrap (`python -I -S -c`) gets the
copy on its stdin (local: a FIFO outside every mount, core.sandbox.feed; docker: the exec's own
connection), so no file the agent's processes could open ever holds it; with a backend that
cannot give stdin, the copy is a file under a random name (O_EXCL|O_NOFOLLOW) the bootstrap
deletes first. Isolated mode and no site mean no module of the workspace, no PYTHON* variable,
no .pth file or sitecustomize runs before the copy is gone (the program's own imports, site
included, work as usual after). Nothing else the program can open — its file, the workspace,
argv, the environment, earlier outputs — holds the nonce. The bootstrap maps line numbers back
to the original and compiles under the original path, so tracebacks, `__file__`, `sys.argv`
and `__name__` are the original's. What remains is reading the interpreter's own memory;
programs showing the means to (structure.tamper_risk) run uninstrumented and earn no progress
credit.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from mlagent_tui.core.sandbox import DEFAULT_DISK_MB, ExecResult, Executor, OutputCallback
from mlagent_tui.core.sandbox.base import as_shell

from .bootstrap import BOOTSTRAP, COMMAND
from .structure import MarkerFilter, instrument_structure, strip_markers, tamper_risk

MAX_SCRIPT_BYTES = 1_000_000


class ProgressReport(BaseModel):
    """How far one execution of a script got (stages 0: not instrumented, and why)."""

    script: str
    parses: bool
    instrumented: bool
    stages: int = 0
    reached: int = 0
    reason: str = ""


def target_script(command: str | list[str]) -> str | None:
    """The script of a plain `python NAME.py` in the working folder, else None."""
    if isinstance(command, str) or len(command) != 2 or command[0] != "python":
        return None
    name = command[1]
    if not name.endswith(".py") or "/" in name or name.startswith((".", "-")):
        return None
    return name


def read_script(cwd: Path, name: str) -> bytes | None:
    """The script's bytes: a regular file, opened without following a link or waiting on a
    pipe the agent may have put there; None for anything else."""
    try:
        fd = os.open(cwd / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= MAX_SCRIPT_BYTES and (chunk := os.read(fd, 1 << 16)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks) if size <= MAX_SCRIPT_BYTES else None


def _write_runner(cwd: Path, content: str) -> str:
    name = f".mlagent-{secrets.token_hex(8)}.py"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(cwd / name, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(content)
    return name


class ProgressExecutor:
    """An Executor that runs `python X.py` instrumented by structure; see the module doc."""

    def __init__(self, inner: Executor, reports: list[ProgressReport]) -> None:
        self.inner = inner
        self.name = inner.name
        self.reports = reports

    def run(
        self,
        command: str | list[str],
        *,
        cwd: Path,
        timeout_s: float = 60.0,
        mem_mb: int = 1024,
        on_output: OutputCallback | None = None,
        disk_mb: int = DEFAULT_DISK_MB,
        read_only: Sequence[str] = (),
    ) -> ExecResult:
        limits = {"timeout_s": timeout_s, "mem_mb": mem_mb, "disk_mb": disk_mb}
        script = target_script(command)
        if script is None:
            return self.inner.run(command, cwd=cwd, on_output=on_output, read_only=read_only,
                                  **limits)  # fmt: skip
        source = read_script(Path(cwd), script)
        try:
            text = source.decode("utf-8") if source is not None else None
        except UnicodeDecodeError:
            text = None
        risk = tamper_risk(text) if text is not None else None
        result = instrument_structure(text) if text is not None and not risk else None
        runner, stdin = None, None
        if result is not None and result.instrumented:
            copy = f"{','.join(map(str, result.line_map))}\n{result.code}"
            try:
                if getattr(self.inner, "takes_input", False):
                    runner, stdin = "-", {"stdin": copy.encode("utf-8")}
                else:  # a backend without stdin: a file the bootstrap deletes before all else
                    runner = _write_runner(Path(cwd), copy)
            except OSError as exc:
                result = result.model_copy(
                    update={"instrumented": False, "reason": f"cannot write the copy: {exc}"}
                )
        if result is None or runner is None:
            self.reports.append(
                ProgressReport(
                    script=script,
                    parses=result.parses if result else _parses(source),
                    instrumented=False,
                    reason=(result.reason if result else risk or "not a readable UTF-8 script"),
                )
            )
            return self.inner.run(command, cwd=cwd, on_output=on_output, read_only=read_only,
                                  **limits)  # fmt: skip
        filt = MarkerFilter(result.nonce, len(result.stages), on_output)
        try:
            res = self.inner.run(
                [*COMMAND, BOOTSTRAP, runner, script],
                cwd=cwd,
                on_output=filt.feed,
                read_only=read_only,
                **limits,
                **(stdin or {}),
            )
        finally:
            filt.close()
            if stdin is None:
                (Path(cwd) / runner).unlink(missing_ok=True)  # unlink never follows a link
        output, _ = strip_markers(res.output, result.nonce, len(result.stages))
        self.reports.append(
            ProgressReport(
                script=script,
                parses=True,
                instrumented=True,
                stages=len(result.stages),
                reached=len(filt.reached),
            )
        )
        return res.model_copy(update={"command": as_shell(command), "output": output})

    def close(self) -> None:
        self.inner.close()


def _parses(source: bytes | None) -> bool:
    import ast

    if source is None:
        return False
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


class ProgressLog:
    """One session's executions' reports, in order; `wrap` is the session's executor hook."""

    def __init__(self) -> None:
        self.reports: list[ProgressReport] = []

    def wrap(self, inner: Executor) -> Executor:
        return ProgressExecutor(inner, self.reports)
