"""Structural instrumentation: the AST round trip, unchanged behaviour, and forged progress."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from mlagent_tui.core.sandbox import ExecResult, OutputCallback, OutputCapture
from mlagent_tui.core.sandbox.base import as_shell
from trainer.instrument.executor import ProgressLog, ProgressReport
from trainer.instrument.model import _DropLines
from trainer.instrument.structure import (
    count_stages,
    instrument_structure,
    marker,
    strip_markers,
    tamper_risk,
    verify_structure,
)
from trainer.rewards import Execution, execution_reward

NONCE = "0123456789abcdef" * 2

# Programs that instrumenting must not break; each prints something and most of them run.
RUNNABLE: dict[str, str] = {
    "future_docstring_decorators_global": (
        '"""Docstring."""\nfrom __future__ import annotations\nimport functools\nCOUNT = 0\n'
        "def deco(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n"
        "    return inner\n@deco\ndef add(a: int, b: int) -> int:\n    global COUNT\n"
        "    COUNT += 1\n    return a + b\ntotal = add(1,\n            2)\nx = 1 + \\\n    2\n"
        "print(__doc__, total, x, COUNT, add.__name__)\n"
    ),
    "top_level_try_then_crash": (
        "try:\n    import not_a_module_xyz\nexcept ImportError as exc:\n"
        "    print('no module', exc.name)\nfinally:\n    print('finally')\n"
        "a = 1; b = 2; print(a + b)\ndata = [1, 2, 3]\nprint(data[10])\nprint('never')\n"
    ),
    "main_and_sys_exit": (
        'import sys\ndef main() -> int:\n    """Entry."""\n    print(\'working\')\n'
        "    if len(sys.argv) > 5:\n        return 2\n"
        "    print('argv', sys.argv, __file__.endswith('solution.py'), __name__)\n    return 3\n"
        "if __name__ == '__main__':\n    sys.exit(main())\nelse:\n    print('imported')\n"
    ),
    "pickle_partial_line_stderr": (
        "import pickle, sys\nclass Point:\n    def __init__(self, x): self.x = x\n"
        "p = pickle.loads(pickle.dumps(Point(3)))\nprint('partial', end='')\n"
        "sys.stderr.write('err line\\n')\nprint(' done', p.x, type(p).__module__)\n"
    ),
    "match_walrus_fstring_with_lambda": (
        "import io\nwith io.StringIO() as buf:\n    buf.write('x')\n    val = buf.getvalue()\n"
        "match val:\n    case 'x':\n        print('matched', (n := len(val)), f'{val!r:>4}')\n"
        "    case _:\n        pass\nsq = lambda v: v * v\nprint(sq(4))\n"
    ),
    "crlf_and_tabs": (
        "import os\r\nif True:\r\n\tx = 1\r\nif __name__ == '__main__':\r\n\tprint('tab', x)\r\n"
        "\tprint('two')\r\n"
    ),
    "unicode": "# -*- coding: utf-8 -*-\nnom = 'café ☕'\nprint(nom)\nλ = 3\nprint(λ)\n",
    "code_in_a_string": (
        'TEMPLATE = """\ndef fake():\n    pass\nprint("not run")\n"""\n'
        "print(TEMPLATE.count('\\n'))\n"
    ),
    "async_main": (
        "import asyncio\nasync def main():\n    await asyncio.sleep(0)\n    print('async main')\n"
        "asyncio.run(main())\n"
    ),
    "no_trailing_newline": "x = 1\nprint(x)",
    "one_line_main_guard": 'def main(): print("m")\nif __name__ == "__main__": main()\n',
    "atexit_and_warning": (
        "import atexit, warnings\natexit.register(lambda: print('bye'))\n"
        "warnings.warn('careful')\nprint('end')\n"
    ),
    "raise_at_top_level_traceback": (
        "def f(v):\n    return 1 / v\n\nvalues = [\n    1,\n    0,\n]\n"
        "for v in values:\n    print(f(v))\n"
    ),
}
# Only parsed, never run.
PARSED_ONLY = {
    "class_decorators_nested": (
        "import dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n"
        "    def m(self):\n        def n():\n            nonlocal_val = 1\n"
        "            return nonlocal_val\n        return n()\n"
    ),
    "global_in_main": (
        "STATE = 0\ndef main():\n    global STATE\n    STATE = 1\n    print(STATE)\nmain()\n"
    ),
    "continuation_in_main_body": (
        "def main():\n    total = 1 + \\\n        2\n    print(total)  # comment\nmain()\n"
    ),
    "trailing_semicolon_and_comments": "x = 1;  # one\n# two\ny = 2;\n",
    "only_definitions": "def f():\n    pass\nclass C:\n    pass\n",
}


def _round_trip(code: str) -> None:
    result = instrument_structure(code, NONCE)
    assert result.parses
    if not result.instrumented:
        assert result.code == code
        return
    assert verify_structure(code, result.code, result.inserted) is None
    dropped = _DropLines(set(result.inserted)).visit(ast.parse(result.code))
    assert ast.dump(dropped) == ast.dump(ast.parse(code))
    compile(result.code, "solution.py", "exec")
    assert len(result.line_map) == len(result.code.split("\n"))
    assert result.code.count(marker(NONCE, 1)) == 1


@pytest.mark.parametrize("name", sorted({**RUNNABLE, **PARSED_ONLY}))
def test_removing_the_inserted_lines_gives_back_the_program(name: str) -> None:
    _round_trip({**RUNNABLE, **PARSED_ONLY}[name])


def test_what_gets_a_marker() -> None:
    code = RUNNABLE["main_and_sys_exit"]
    result = instrument_structure(code, NONCE)
    labels = [s.label for s in result.stages]
    # after `import sys`, inside main (not after its docstring or return), and after the guard
    assert labels[0] == "line 1: import sys"
    assert "line 3" not in " ".join(labels) and not any("return" in lb for lb in labels)
    assert any(lb.startswith("line 5: if len") for lb in labels)
    assert labels[-1].startswith("line 9: if __name__")
    assert not instrument_structure(PARSED_ONLY["only_definitions"]).instrumented
    one_line = instrument_structure(RUNNABLE["one_line_main_guard"], NONCE)
    assert len(one_line.stages) == 1  # the guard shares its line with its body: only after it


def test_a_program_that_does_not_parse_is_returned_unchanged() -> None:
    for bad in ("def f(:\n    pass\n", "x = (1,\n", "\tx = 1\n  y = 2\n", "print('a'\x00)\n"):
        result = instrument_structure(bad)
        assert result.parses is False and result.instrumented is False
        assert result.code == bad and result.stages == []


def test_verification_rejects_a_line_inside_a_string() -> None:
    original = 'x = """\na\n"""\n'
    sneaky = 'x = """\na\nprint(1)\n"""\n'
    assert verify_structure(original, sneaky, [3]) is not None
    assert verify_structure("x = [\n1,\n]\n", "x = [\n1,\n2,\n]\n", [3]) is not None


def test_counting_needs_this_nonce_and_a_known_stage() -> None:
    other = "f" * 32
    out = "\n".join(
        [marker(NONCE, 1), marker(NONCE, 1), marker(other, 2), marker(NONCE, 3), marker(NONCE, 99)]
    )
    assert count_stages(out, NONCE, stages=3) == 2  # 1 and 3; the other nonce and 99 are not
    text, reached = strip_markers("a" + marker(NONCE, 1) + "\nb\n" + marker(other, 2), NONCE, 3)
    assert reached == 1 and text == "ab\n" + marker(other, 2)  # a fake stays: it is output


# -- running: the same behaviour apart from the markers ------------------------------------------
class PlainExecutor:
    """Runs commands as plain subprocesses (fast; the sandbox is tested with sessions)."""

    name = "plain"

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

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
    ) -> ExecResult:
        assert isinstance(command, list)
        self.commands.append(command)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            [sys.executable, *command[1:]],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout_s,
            env=env,
        )
        capture = OutputCapture(on_output)
        capture.feed(proc.stdout)
        capture.close()
        return ExecResult(
            command=as_shell(command),
            exit_code=proc.returncode,
            duration_s=0.0,
            output=capture.text(),
        )

    def close(self) -> None:
        pass


def _both(tmp_path: Path, code: str) -> tuple[ExecResult, ExecResult, ProgressReport, list[str]]:
    (tmp_path / "solution.py").write_bytes(code.encode())
    inner = PlainExecutor()
    plain = inner.run(["python", "solution.py"], cwd=tmp_path)
    log = ProgressLog()
    streamed: list[str] = []
    run = log.wrap(inner).run(["python", "solution.py"], cwd=tmp_path, on_output=streamed.append)
    return plain, run, log.reports[-1], streamed


@pytest.mark.parametrize("name", sorted(RUNNABLE))
def test_instrumented_programs_run_the_same(tmp_path: Path, name: str) -> None:
    plain, run, report, streamed = _both(tmp_path, RUNNABLE[name])
    assert (run.exit_code, run.output) == (plain.exit_code, plain.output)
    assert run.command == "python solution.py" and streamed == run.output.split("\n")
    assert "mlagent-progress" not in run.output
    assert report.instrumented == (report.stages > 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["solution.py"]  # no copy left
    assert (tmp_path / "solution.py").read_bytes() == RUNNABLE[name].encode()


def test_reached_stages_follow_the_crash(tmp_path: Path) -> None:
    _, run, report, _ = _both(tmp_path, RUNNABLE["top_level_try_then_crash"])
    assert "IndexError" in run.output and "line 9" in run.output  # the original line number
    assert (report.stages, report.reached) == (5, 3)  # try, `a; b; print`, data; not print(s)


# -- forging progress ----------------------------------------------------------------------------
FORGER = """\
import atexit, glob, os, re, sys
def forge():
    seen = open(__file__).read() + " ".join(sys.argv) + repr(dict(os.environ))
    for path in glob.glob("*") + glob.glob(".*"):
        if os.path.isfile(path):
            seen += open(path, errors="replace").read()
    nonces = set(re.findall(r"<<mlagent-progress ([0-9a-f]{32}) ", seen)) | {"0" * 32}
    for nonce in nonces:
        for stage in range(1, 30):
            print("<<mlagent-" + "progress", nonce, str(stage) + ">>", flush=True)
    return nonces
atexit.register(forge)
print("found", sorted(forge()))
int("crash")
x = 1
y = 2
"""
HONEST = FORGER.replace("atexit.register(forge)", "_ = 0").replace(
    'print("found", sorted(forge()))', 'print("found")'
)


def test_printing_markers_reading_files_env_or_after_exit_earns_nothing(tmp_path: Path) -> None:
    assert tamper_risk(FORGER) is None  # nothing but files, argv, environment and atexit
    _, run, report, _ = _both(tmp_path, FORGER)
    assert "found ['" + "0" * 32 + "']" in run.output  # no nonce anywhere it could read
    assert "<<mlagent-progress " + "0" * 32 + " 1>>" in run.output  # printed, and not counted
    assert (report.stages, report.reached) == (6, 3)  # import, register, print; not int(...)
    _, _, honest, _ = _both(tmp_path, HONEST)
    assert (honest.stages, honest.reached) == (report.stages, report.reached)

    def reward(r: ProgressReport) -> float:
        ex = Execution(answered=True, parses=True, exit_code=1, stages=r.stages,
                       stages_reached=r.reached)  # fmt: skip
        return execution_reward(ex)

    assert reward(report) == reward(honest)


def test_the_nonce_is_never_in_argv_and_the_copy_is_gone(tmp_path: Path) -> None:
    class Spy(PlainExecutor):
        def run(self, command, **kw):  # noqa: ANN001, ANN003, ANN202
            runner = tmp_path / command[5]  # python -I -S -c BOOTSTRAP RUNNER SCRIPT
            self.nonce = runner.read_text().split("<<mlagent-progress ")[1].split()[0]
            return super().run(command, **kw)

    (tmp_path / "solution.py").write_text("import os\nprint(os.listdir('.'))\n")
    spy = Spy()
    log = ProgressLog()
    run = log.wrap(spy).run(["python", "solution.py"], cwd=tmp_path)
    assert len(spy.nonce) == 32 and spy.nonce not in " ".join(spy.commands[-1])
    assert run.output == "['solution.py']"  # the program never sees the instrumented copy
    log.wrap(spy).run(["python", "solution.py"], cwd=tmp_path)
    first = spy.nonce
    log.wrap(spy).run(["python", "solution.py"], cwd=tmp_path)
    assert spy.nonce != first  # a fresh nonce per execution


INTROSPECTING = """\
import sys
for const in sys._getframe(0).f_code.co_consts:
    if isinstance(const, bytes) and b"mlagent-progress" in const:
        for stage in range(1, 9):
            print(const.decode().replace(" 1>>", f" {stage}>>").strip())
int("crash")
x = 1
"""


@pytest.mark.parametrize(
    "code",
    [
        INTROSPECTING,
        "import gc\nprint(len(gc.get_objects()))\n",
        "print(open('/proc/self/cmdline').read())\n",
        "import inspect\nprint(len(inspect.stack()))\n",
        "exec('print(1)')\n",
        "import os\nr, w = os.pipe()\nos.dup2(w, 1)\n",
    ],
)
def test_programs_that_can_reach_into_the_interpreter_run_uninstrumented(
    tmp_path: Path, code: str
) -> None:
    assert tamper_risk(code) is not None
    plain, run, report, _ = _both(tmp_path, code)
    assert not report.instrumented and report.stages == 0 and report.reason
    assert run.output == plain.output
    forged = Execution(answered=True, parses=True, exit_code=1, stages=0)
    assert execution_reward(forged) == pytest.approx(-0.9)  # no progress credit at all


def test_ordinary_ml_code_is_not_screened() -> None:
    code = (
        "import gc, re, torch\nmodel = torch.compile(model)\nmodel.eval()\n"
        "pattern = re.compile('x')\ngc.collect()\nprint(getattr(model, 'fc'))\n"
    )
    assert tamper_risk(code) is None


def test_links_and_pipes_run_as_they_are(tmp_path: Path) -> None:
    """The host never follows the agent's link, nor waits on a pipe it put there."""

    class Canned(PlainExecutor):
        def run(self, command, **kw):  # noqa: ANN001, ANN003, ANN202
            self.commands.append(command)
            return ExecResult(command=as_shell(command), exit_code=0, duration_s=0.0)

    (tmp_path / "real.py").write_text("print(1)\n")
    (tmp_path / "solution.py").symlink_to(tmp_path / "real.py")
    os.mkfifo(tmp_path / "train.py")
    inner, log = Canned(), ProgressLog()
    for name in ("solution.py", "train.py", "missing.py"):
        log.wrap(inner).run(["python", name], cwd=tmp_path)
        assert inner.commands[-1] == ["python", name]
    assert [r.instrumented for r in log.reports] == [False] * 3
    log.wrap(inner).run("python real.py; echo", cwd=tmp_path)  # not a plain script run
    assert inner.commands[-1] == "python real.py; echo" and len(log.reports) == 3
