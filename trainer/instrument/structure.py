"""Structural instrumentation: progress prints placed by the program's own syntax, no model.

Why: while a policy never succeeds, every reward is the same and RL has no signal. A program
that loads the data and then crashes got further than one that crashes at once; to see how far,
a progress marker is written after each top-level statement, and after each statement of the
body of `if __name__ == "__main__":` and of a top-level `main()` the module calls.

A marker names a per-execution random nonce, so a program cannot earn progress by printing the
marker format: its text was written before the nonce existed, and the instrumented copy that
holds the nonce never lies where the program can read it (executor.py). Inserted lines are
verified, not trusted: taking them out must give back the original syntax tree and text, or the
program runs as it is. Markers go straight to file descriptor 1 (never through `print` or
`sys.stdout`, which a program may replace or read back) inside a try that swallows errors, so
instrumenting never breaks a script.
"""

from __future__ import annotations

import ast
import re
import secrets
from collections.abc import Callable

from pydantic import BaseModel

from .model import _DropLines

MARKER_TAG = "mlagent-progress"
_MARKER = re.compile(r"<<mlagent-progress ([0-9a-f]+) (\d+)>>")
_SKIP = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Pass,
    ast.Global,
    ast.Nonlocal,
    ast.Return,
    ast.Raise,
    ast.Break,
    ast.Continue,
)
# What a program needs to reach the nonce in its own interpreter (frames, code constants, the
# heap, its output pipe) or to run code we cannot read. Such a program runs uninstrumented.
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})
_RISKY_ATTRS = frozenset(
    {
        "_getframe", "currentframe", "_current_frames", "getouterframes", "getinnerframes",
        "f_code", "f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame",
        "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "co_consts", "co_code",
        "__code__", "get_objects", "get_referrers", "get_referents", "settrace", "setprofile",
        "dup2",
    }
)  # fmt: skip
_RISKY_BUILTINS = frozenset({"exec", "eval", "compile", "__import__", "__builtins__", "breakpoint"})
_RISKY_MODULES = frozenset({"inspect", "ctypes", "_ctypes", "builtins", "importlib", "cffi"})
_RISKY_PATHS = ("/proc/", "/dev/fd", "/dev/stdout", "/dev/stderr")


class Stage(BaseModel):
    """One marker: its number, the original line it follows, and the statement it marks."""

    index: int
    after_line: int
    label: str


class StructureResult(BaseModel):
    """The program to run: instrumented (`code`, with `line_map[i]` the original line of its
    line i + 1), or the original when `instrumented` is False, and why."""

    code: str
    parses: bool
    instrumented: bool
    nonce: str = ""
    stages: list[Stage] = []
    line_map: list[int] = []
    inserted: list[int] = []  # the lines of `code` that were added
    reason: str = ""


def new_nonce() -> str:
    return secrets.token_hex(16)


def marker(nonce: str, stage: int) -> str:
    return f"<<{MARKER_TAG} {nonce} {stage}>>"


def _marker_lines(indent: str, nonce: str, stage: int) -> list[str]:
    data = (marker(nonce, stage) + "\n").encode()
    return [
        f'{indent}try: __import__("os").write(1, {data!r})',
        f"{indent}except Exception: pass",
    ]


def _skip(stmt: ast.stmt) -> bool:
    if isinstance(stmt, _SKIP):
        return True
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return True
    if not isinstance(stmt, ast.Expr):
        return False
    value = stmt.value  # docstrings, and exits (nothing after them runs)
    return isinstance(value, ast.Constant) or (
        isinstance(value, ast.Call) and ast.unparse(value.func) in _EXITS
    )


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _body_indent(body: list[ast.stmt], lines: list[str], header: int) -> str | None:
    """The indentation of a nested body, or None where it shares its header's line."""
    first = body[0]
    if _first_line(first) == header:
        return None
    prefix = lines[first.lineno - 1].encode()[: first.col_offset].decode(errors="replace")
    return prefix if prefix.strip() == "" else None


def _points(
    body: list[ast.stmt], lines: list[str], indent: str, depth: int
) -> list[tuple[int, int, str, ast.stmt]]:
    """(line after which, -depth, indent, statement) for each statement worth a marker."""
    out = []
    for i, stmt in enumerate(body):
        end = stmt.end_lineno or stmt.lineno
        if _skip(stmt):
            continue
        if i + 1 < len(body) and _first_line(body[i + 1]) <= end:
            continue  # `a; b` on one line: only after the last of them
        if lines[end - 1].rstrip().endswith("\\"):
            continue
        out.append((end, -depth, indent, stmt))
    return out


def _all_points(tree: ast.Module, lines: list[str]) -> list[tuple[int, int, str, ast.stmt]]:
    points = _points(tree.body, lines, "", 0)
    calls_main = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "main"
        for n in ast.walk(tree)
    )
    for node in tree.body:
        nested: list[ast.stmt] = []
        if _is_main_guard(node):
            nested = node.body
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "main":
            nested = node.body if calls_main else []
        indent = _body_indent(nested, lines, node.lineno) if nested else None
        if indent is not None:
            points += _points(nested, lines, indent, 1)
    return sorted(points, key=lambda p: (p[0], p[1]))


def instrument_structure(code: str, nonce: str | None = None) -> StructureResult:
    """`code` with a marker after each stage, verified; the original where that cannot be."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        return StructureResult(code=code, parses=False, instrumented=False, reason=str(exc))
    text = code.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    nonce = nonce or new_nonce()
    points = _all_points(tree, lines)
    if not points:
        return StructureResult(code=code, parses=True, instrumented=False, reason="no stages")
    out: list[str] = []
    line_map: list[int] = []
    inserted: list[int] = []
    stages: list[Stage] = []
    at = 0
    for n, line in enumerate(lines, 1):
        out.append(line)
        line_map.append(n)
        while at < len(points) and points[at][0] == n:
            _, _, indent, stmt = points[at]
            at += 1
            label = lines[stmt.lineno - 1].strip()[:60]
            stages.append(Stage(index=at, after_line=n, label=f"line {stmt.lineno}: {label}"))
            for added in _marker_lines(indent, nonce, at):
                out.append(added)
                line_map.append(n)
                inserted.append(len(out))
    new = "\n".join(out)
    problem = verify_structure(code, new, inserted)
    if problem:
        return StructureResult(code=code, parses=True, instrumented=False, reason=problem)
    return StructureResult(
        code=new,
        parses=True,
        instrumented=True,
        nonce=nonce,
        stages=stages,
        line_map=line_map,
        inserted=inserted,
    )


def verify_structure(original: str, new: str, inserted: list[int]) -> str | None:
    """None when taking the `inserted` lines out of `new` gives back `original`: the same
    lines, and the same syntax tree (ast.dump); otherwise what differs."""
    added = set(inserted)
    kept = [ln for i, ln in enumerate(new.split("\n"), 1) if i not in added]
    if kept != original.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        return "the inserted lines are not the only change"
    try:
        new_tree = ast.parse(new)
    except SyntaxError as exc:
        return f"instrumented program does not parse: {exc.msg} (line {exc.lineno})"
    if ast.dump(_DropLines(added).visit(new_tree)) != ast.dump(ast.parse(original)):
        return "the inserted lines change the program's structure"
    return None


def tamper_risk(code: str) -> str | None:
    """Why a program could read the nonce out of its own interpreter (frames, code constants,
    the heap, its own output), or runs code we cannot read; None when it shows no such means.

    A screen, not a proof: it raises the bar above printing and reading files; see
    executor.py for what else keeps the nonce out of reach.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        name = ""
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr if node.attr in _RISKY_ATTRS else ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in _RISKY_ATTRS:
                name = node.value
            elif any(p in node.value for p in _RISKY_PATHS):
                return f"names {node.value[:40]!r}"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for mod in mods:
                if mod and mod.split(".")[0] in _RISKY_MODULES:
                    return f"imports {mod}"
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in _RISKY_ATTRS:
                        return f"imports {alias.name}"
        if name in _RISKY_ATTRS or name in _RISKY_BUILTINS:
            return f"uses {name}"
    return None


class MarkerFilter:
    """Takes this execution's markers out of an output, line by line, and notes the stages.

    A marker ends its line, so text before it is the start of a line the program had not
    finished: it is joined to the next line, which gives back the program's own output.
    """

    def __init__(self, nonce: str, stages: int, forward: Callable[[str], None] | None) -> None:
        self.nonce, self.stages, self.forward = nonce, stages, forward
        self.reached: set[int] = set()
        self.lines: list[str] = []
        self._carry = ""

    def feed(self, line: str) -> None:
        line = self._carry + line
        self._carry = ""
        found = False
        for match in _MARKER.finditer(line):
            if match.group(1) == self.nonce:
                found = True
                stage = int(match.group(2))
                if 1 <= stage <= self.stages:
                    self.reached.add(stage)
        if not found:
            self._emit(line)
            return
        rest = _MARKER.sub(lambda m: "" if m.group(1) == self.nonce else m.group(0), line)
        self._carry = rest

    def close(self) -> None:
        if self._carry:
            self._emit(self._carry)
            self._carry = ""

    def _emit(self, line: str) -> None:
        self.lines.append(line)
        if self.forward is not None:
            self.forward(line)


def strip_markers(output: str, nonce: str, stages: int) -> tuple[str, int]:
    """The output without this execution's markers, and how many distinct stages it reached."""
    filt = MarkerFilter(nonce, stages, None)
    for line in output.split("\n") if output else []:
        filt.feed(line)
    filt.close()
    return "\n".join(filt.lines), len(filt.reached)


def count_stages(output: str, nonce: str, stages: int) -> int:
    """Distinct stages (1..stages) whose marker with this nonce is in the output."""
    return strip_markers(output, nonce, stages)[1]
