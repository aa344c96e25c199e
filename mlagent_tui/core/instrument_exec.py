"""Running a script instrumented by structure, without the program or its reader ever seeing it.

An Executor wrapper: `python X.py` runs a structurally instrumented copy of X.py (a fresh nonce
per execution), the markers are taken out of the output before anyone sees it (the store, the
agent's observation), and a ProgressReport per execution says how far the program got. The
workspace keeps the agent's own X.py, so the session stores and shows the original program.

How the nonce stays out of the program's reach: a fixed bootstrap (`python -I -S -c`) gets the
copy on its stdin, a pipe the host fills from outside every mount (sandbox.feed), so no file
the agent's processes could open ever holds it; with a backend that cannot give stdin, the
copy is a file under a random name (O_EXCL|O_NOFOLLOW) the bootstrap deletes first. Isolated
mode and no site mean no module of the workspace, no PYTHON* variable, no .pth file or
sitecustomize runs before the copy is gone (the program's own imports, site included, work as
usual after). Nothing else the program can open — its file, the workspace, argv, the
environment, earlier outputs — holds the nonce. The bootstrap maps line numbers back to the
original and compiles under the original path, so tracebacks, `__file__`, `sys.argv` and
`__name__` are the original's. What remains is reading the interpreter's own memory; programs
showing the means to (core.instrument_structure.tamper_risk) run uninstrumented and earn no
progress credit.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from .instrument_structure import MarkerFilter, instrument_structure, strip_markers, tamper_risk
from .sandbox import DEFAULT_DISK_MB, ExecResult, Executor, OutputCallback
from .sandbox.base import as_shell

MAX_SCRIPT_BYTES = 1_000_000

# Run as `python -I -S -c BOOTSTRAP SOURCE SCRIPT`: isolated (no script folder or current folder
# on sys.path, no PYTHON* variables, no user site) and without site, so nothing of the
# workspace, the environment or site-packages (.pth files, sitecustomize) runs before the copy
# is read and gone. SOURCE "-" is stdin (a pipe the bootstrap drains); otherwise a file it
# deletes. Then it does what a plain `python SCRIPT` start does: site (user site included),
# PYTHONPATH, the script's folder first on sys.path, PYTHONUNBUFFERED, PYTHONDONTWRITEBYTECODE.
BOOTSTRAP = """\
def _mlagent_run():
    import sys
    loaded = set(sys.modules)
    import ast, os
    source, script = sys.argv[1], sys.argv[2]
    if source == "-":
        chunks = []
        while chunk := os.read(0, 1 << 16):
            chunks.append(chunk)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        head, body = b"".join(chunks).decode("utf-8").split("\\n", 1)
    else:
        with open(source, encoding="utf-8") as fh:
            head, body = fh.read().split("\\n", 1)
        try:
            os.unlink(source)
        except OSError:  # the copy would stay readable: run the original, without markers
            with open(script, "rb") as fh:
                head, body = "", fh.read()
    origin = [int(n) for n in head.split(",")] if head else []
    tree = ast.parse(body, script)
    for node in ast.walk(tree):
        if not origin or getattr(node, "lineno", None) is None:
            continue
        start, end = origin[node.lineno - 1], origin[(node.end_lineno or node.lineno) - 1]
        if start == end and node.lineno != node.end_lineno:
            node.end_col_offset = max(node.end_col_offset or 0, node.col_offset)
        node.lineno, node.end_lineno = start, end
    path = os.path.abspath(script)
    code = compile(tree, path, "exec", dont_inherit=True)
    for name in set(sys.modules) - loaded:  # the program imports its own `ast`, as usual
        del sys.modules[name]
    env = os.environ
    import io, site
    if not env.get("PYTHONNOUSERSITE"):
        site.check_enableusersite = lambda: (
            os.geteuid() == os.getuid() and os.getegid() == os.getgid()
        ) or None
    sys.path[0:0] = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    site.main()
    sys.path.insert(0, os.path.dirname(path))
    sys.dont_write_bytecode = sys.dont_write_bytecode or bool(env.get("PYTHONDONTWRITEBYTECODE"))
    if env.get("PYTHONUNBUFFERED"):
        for name, fd in (("stdout", 1), ("stderr", 2)):
            old = getattr(sys, name)
            raw = io.FileIO(fd, "w", closefd=False)
            raw.name = old.name
            new = io.TextIOWrapper(raw, old.encoding, old.errors, "\\n", old.line_buffering, True)
            setattr(sys, name, new)
            setattr(sys, "__" + name + "__", new)
    scope = sys.modules["__main__"].__dict__
    del scope["_mlagent_run"]
    scope["__file__"] = path
    sys.argv[:] = [script]
    return code
try:
    exec(_mlagent_run())
except SystemExit:
    raise
except BaseException as _mlagent_error:
    _mlagent_error.with_traceback(_mlagent_error.__traceback__.tb_next)
    __import__("sys").excepthook(
        type(_mlagent_error), _mlagent_error, _mlagent_error.__traceback__
    )
    raise SystemExit(1) from None
"""


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
                ["python", "-I", "-S", "-c", BOOTSTRAP, runner, script],
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
