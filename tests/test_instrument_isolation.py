"""The instrumented copy and its nonce stay out of the agent's reach before its code runs.

The agent writes the workspace, and the bootstrap that runs its instrumented program starts in
that workspace: a module there named like one the bootstrap imports (ast, enum), a site hook,
or a process watching the folder would see the nonce and print every marker. Each attack here
is a program that would earn all stages if it got the nonce; it must earn what an honest
program that crashes at the same place earns.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox import ExecResult, LocalExecutor, OutputCallback, OutputCapture
from mlagent_tui.core.sandbox.base import as_shell
from trainer.instrument.executor import ProgressLog, ProgressReport

MARKER = re.compile(rb"<<mlagent-progress ([0-9a-f]{32}) ")

# Reads the nonce wherever a file, argv or stdin still shows it, prints every marker with it.
STEAL = """\
import os, sys
_seen = b" ".join(a.encode() for a in sys.argv)
for _p in os.listdir(".") + sys.argv[1:]:
    try:
        with open(_p, "rb") as _fh:
            _seen += _fh.read()
    except OSError:
        pass
try:
    os.set_blocking(0, False)
    _seen += os.read(0, 1 << 22)
except OSError:
    pass
_tag = b"<<mlagent-" + b"progress "
_at = _seen.find(_tag)
if _at >= 0:
    _n = _seen[_at + len(_tag) : _at + len(_tag) + 32]
    for _s in range(1, 40):
        os.write(1, _tag + _n + b" %d>>\\n" % _s)
    os.write(1, b"stolen\\n")
os._exit(1)
"""
# Crashes at its second statement: one stage reached, honestly.
PROGRAM = "import os\nint('crash')\nx = 1\ny = 2\nz = 3\n"


class PlainExecutor:
    """Plain subprocesses with the sandbox's environment (no isolation to lean on), the
    workspace shown to `spy` when the command starts, and stdin given where asked."""

    name = "plain"
    takes_input = True

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = env or {}
        self.seen_at_start: list[bytes] = []

    def run(
        self,
        command: str | list[str],
        *,
        cwd: Path,
        timeout_s: float = 60.0,
        mem_mb: int = 1024,
        on_output: OutputCallback | None = None,
        disk_mb: int = 0,
        read_only: Sequence[str] = (),
        stdin: bytes | None = None,
    ) -> ExecResult:
        assert isinstance(command, list)
        self.seen_at_start.append(_everything_in(cwd))  # what a watching process could read
        env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONUNBUFFERED": "1"}
        proc = subprocess.run(
            [sys.executable, *command[1:]],
            cwd=cwd,
            input=stdin or b"",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout_s,
            env={**env, **self.env},
        )
        capture = OutputCapture(on_output)
        capture.feed(proc.stdout)
        capture.close()
        return ExecResult(
            command=as_shell(command), exit_code=proc.returncode, duration_s=0.0,
            output=capture.text(),
        )  # fmt: skip

    def close(self) -> None:
        pass


class SpyLocal(LocalExecutor):
    """The real local sandbox; notes what the workspace holds as the command starts."""

    seen_at_start: list[bytes]

    def run(self, command, *, cwd, **kw):  # noqa: ANN001, ANN003, ANN201
        self.seen_at_start = [*getattr(self, "seen_at_start", []), _everything_in(cwd)]
        return super().run(command, cwd=cwd, **kw)


def _everything_in(folder: Path) -> bytes:
    out = b""
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                out += (Path(root) / name).read_bytes()
            except OSError:
                pass
    return out


@pytest.fixture
def local() -> LocalExecutor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        executor = SpyLocal()
    yield executor
    executor.close()


def _run(inner, ws: Path, program: str = PROGRAM) -> tuple[ExecResult, ProgressReport]:  # noqa: ANN001
    (ws / "solution.py").write_text(program)
    log = ProgressLog()
    res = log.wrap(inner).run(["python", "solution.py"], cwd=ws, timeout_s=30)
    return res, log.reports[-1]


def _assert_no_theft(res: ExecResult, report: ProgressReport) -> None:
    assert "stolen" not in res.output, res.output
    assert report.instrumented and report.reached == 1, (report, res.output)
    assert "ValueError" in res.output  # the program itself ran, and crashed where it does


@pytest.mark.parametrize("module", ["ast", "enum", "contextlib", "re", "linecache"])
def test_a_workspace_module_shadowing_what_the_bootstrap_imports_gets_no_nonce(
    tmp_path: Path, module: str
) -> None:
    (tmp_path / f"{module}.py").write_text(STEAL)
    res, report = _run(PlainExecutor(), tmp_path)
    _assert_no_theft(res, report)


@pytest.mark.parametrize("hook", ["sitecustomize", "usercustomize"])
def test_site_hooks_in_the_workspace_or_user_site_get_no_nonce(tmp_path: Path, hook: str) -> None:
    (tmp_path / f"{hook}.py").write_text(STEAL)
    user_site = tmp_path / ".local/lib/python{}.{}/site-packages".format(*sys.version_info[:2])
    user_site.mkdir(parents=True)
    (user_site / f"{hook}.py").write_text(STEAL)
    (user_site / ".steal.py").write_text(STEAL)
    (user_site / "steal.pth").write_text(
        f"import os; exec(open({str(user_site / '.steal.py')!r}).read())\n"
    )
    res, report = _run(PlainExecutor(), tmp_path)
    _assert_no_theft(res, report)


def test_python_variables_in_the_environment_run_nothing_first(tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "ast.py").write_text(STEAL)
    (evil / "startup.py").write_text(STEAL)
    env = {"PYTHONPATH": str(evil), "PYTHONSTARTUP": str(evil / "startup.py"),
           "PYTHONINSPECT": "1", "PYTHONWARNINGS": "error"}  # fmt: skip
    res, report = _run(PlainExecutor(env), tmp_path)
    _assert_no_theft(res, report)


def test_no_file_holds_the_nonce_while_the_command_starts(tmp_path: Path) -> None:
    """A process left watching the workspace would read a copy written there."""
    inner = PlainExecutor()
    _run(inner, tmp_path)
    assert not MARKER.search(inner.seen_at_start[-1])


def test_the_real_local_sandbox_keeps_the_copy_out_of_the_workspace(
    tmp_path: Path, local: SpyLocal
) -> None:
    (tmp_path / "ast.py").write_text(STEAL)
    res, report = _run(local, tmp_path)
    _assert_no_theft(res, report)
    assert not MARKER.search(local.seen_at_start[-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ast.py", "solution.py"]


def test_the_program_still_runs_as_a_script_of_its_folder(tmp_path: Path, local: SpyLocal) -> None:
    """After the bootstrap the program's folder leads sys.path, site-packages are there, stdin
    is empty and output unbuffered; a module of its own named like one the bootstrap used (ast)
    is the one it imports, as in a plain run."""
    (tmp_path / "utils.py").write_text("VALUE = 41\n")
    program = (
        "import os, sys\nimport utils\nprint('utils', utils.VALUE + 1)\n"
        "print('path0', sys.path[0] == os.path.dirname(os.path.abspath(__file__)))\n"
        "print('stdin', repr(sys.stdin.read()))\n"
        "print('argv', sys.argv, __name__)\n"
        "print('unbuffered', sys.stdout.write_through)\n"
        "import numpy\nprint('site-packages', bool(numpy.__version__))\n"
    )
    own = tmp_path / "own"
    own.mkdir()
    (own / "ast.py").write_text("MINE = True\n")
    for inner in (local, PlainExecutor()):
        res, report = _run(inner, tmp_path, program)
        assert res.exit_code == 0, res.output
        assert report.instrumented and report.reached == report.stages
        assert res.output.splitlines() == [
            "utils 42", "path0 True", "stdin ''", "argv ['solution.py'] __main__",
            "unbuffered True", "site-packages True",
        ]  # fmt: skip
        res, _ = _run(inner, own, "import ast\nprint('own ast', getattr(ast, 'MINE', False))\n")
        assert res.output == "own ast True", res.output


def test_a_copy_far_larger_than_a_pipe_arrives_whole(tmp_path: Path, local: SpyLocal) -> None:
    program = "".join(f"x{i} = {i}\n" for i in range(5000)) + "print('end', x4999)\n"
    res, report = _run(local, tmp_path, program)
    assert res.output == "end 4999" and report.reached == report.stages == 5001


def test_input_nobody_reads_never_holds_the_command_up(tmp_path: Path, local: SpyLocal) -> None:
    for command in ("true", "exit 3", "head -c 10 >/dev/null"):
        res = local.run(command, cwd=tmp_path, stdin=b"x" * 1_000_000, timeout_s=20)
        assert not res.timed_out and res.duration_s < 10
    assert list(local._script_dir.glob("stdin-*")) == []  # no FIFO left behind
