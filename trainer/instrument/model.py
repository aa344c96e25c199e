"""Environment instrumentation (RL for MLE agents): progress prints inserted by a frozen model.

A program that crashes half-way earns partial credit for each stage it reached. To see the
stages, a *separate, frozen* model (the base model or an API model, never the policy being
trained) inserts progress prints into the agent's program. The insertion is verified, not
trusted: the only accepted change is added single-line print/log calls naming a marker; anything
else returns the original program untouched, so instrumentation can never lose or alter a program.
"""

from __future__ import annotations

import ast
import difflib
import re

from pydantic import BaseModel

from mlagent_tui.core.llm import ChatModel, Message, ModelError

PROGRESS_MARKERS: tuple[str, ...] = (
    "imported packages",
    "loaded data",
    "defined model",
    "training loss:",
    "trained model",
    "testing loss:",
    "predicted test labels",
)

# Calls a progress line may make: the print itself, and cheap read-only formatting of values.
_PRINT_CALLS = re.compile(r"^(print|(logging|logger|log)\.(info|debug|warning))$")
_SAFE_FUNCS = frozenset({"str", "float", "int", "len", "round", "repr", "format"})
_SAFE_METHODS = frozenset(
    {"item", "mean", "sum", "std", "min", "max", "tolist", "detach", "cpu", "numpy", "format"}
)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)

SYSTEM_PROMPT = (
    "You instrument Python programs with progress prints. Insert a print statement, on a line of "
    "its own, right after each stage the program reaches, using exactly these messages:\n"
    + "\n".join(f"- {m!r}" for m in PROGRESS_MARKERS)
    + "\nFor the losses, print the value after the colon, e.g. print('training loss:', loss). "
    "Skip stages the program does not have. Change nothing else: no edits, no removals, no "
    "comments, no reformatting. Answer with the whole program in one ```python block."
)


class InstrumentResult(BaseModel):
    """The program to run (instrumented, or the original when ok is False) and why."""

    code: str
    ok: bool
    reason: str = ""
    added: list[str] = []
    markers: list[str] = []


def count_progress(output: str) -> int:
    """How many distinct markers appear in the output (case-insensitive, each line on its own)."""
    found: set[str] = set()
    for line in output.lower().splitlines():
        found.update(m for m in PROGRESS_MARKERS if m in line)
    return len(found)


def markers_in(text: str) -> list[str]:
    """The markers a piece of text names, in the order of PROGRESS_MARKERS."""
    low = text.lower()
    return [m for m in PROGRESS_MARKERS if m in low]


def extract_code(answer: str) -> str:
    """The program in a model's answer: the first python-tagged fence, any fence, or the text."""
    blocks = _FENCE.findall(answer)
    for lang, body in blocks:
        if lang.lower() in ("python", "py", "python3"):
            return body
    if blocks:
        return blocks[0][1]
    return answer.strip("\n") + "\n" if answer.strip() else ""


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _call_name(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def check_progress_line(line: str) -> str | None:
    """None when `line` is a harmless progress print; otherwise why it is not."""
    stripped = line.strip()
    try:
        tree = ast.parse(stripped)
    except SyntaxError:
        return f"added line is not a statement: {stripped!r}"
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return f"added line is not a single call: {stripped!r}"
    call = tree.body[0].value
    if not isinstance(call, ast.Call) or not _PRINT_CALLS.match(_call_name(call.func)):
        return f"added line is not a print/log call: {stripped!r}"
    if not markers_in(stripped):
        return f"added print names no progress marker: {stripped!r}"
    for node in ast.walk(call):
        if isinstance(node, ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom | ast.Lambda):
            return f"added print does more than print: {stripped!r}"
        if isinstance(node, ast.Call) and node is not call:
            func = node.func
            safe = (isinstance(func, ast.Name) and func.id in _SAFE_FUNCS) or (
                isinstance(func, ast.Attribute) and func.attr in _SAFE_METHODS
            )
            if not safe:
                return f"added print calls {ast.unparse(func)}(): {stripped!r}"
    return None


class _DropLines(ast.NodeTransformer):
    """Removes the statements that start on the given lines (the inserted prints)."""

    def __init__(self, lines: set[int]) -> None:
        self.lines = lines

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                kept = [s for s in value if getattr(s, "lineno", None) not in self.lines]
                setattr(node, name, [self.visit(s) for s in kept])
            elif isinstance(value, ast.AST):
                self.visit(value)
        return node


def verify_instrumentation(original: str, new: str) -> tuple[list[str], str | None]:
    """The added progress lines, and None, or the reason the new program is not acceptable.

    Line by line (trailing whitespace ignored), every difference must be an inserted progress
    print or blank line. Where the original parses as Python, the new program must too, and with
    the inserted prints taken out its syntax tree must equal the original's: that catches a print
    slipped into a multi-line string, or one that moves the lines after it out of their block.
    """
    before = [ln.rstrip() for ln in original.splitlines()]
    after = [ln.rstrip() for ln in new.splitlines()]
    added: list[str] = []
    inserted_at: set[int] = set()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, i1, _i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op != "insert":
            what = "removed" if op == "delete" else "changed"
            return [], f"{what} original line {i1 + 1}: {before[i1]!r}"
        for j in range(j1, j2):
            if not after[j].strip():
                continue
            problem = check_progress_line(after[j])
            if problem:
                return [], problem
            added.append(after[j].strip())
            inserted_at.add(j + 1)
    if not added:
        return [], "no progress prints were added"
    try:
        original_tree = ast.parse(original)
    except SyntaxError:
        return added, None  # not Python we can parse: the line check is all we can do
    try:
        new_tree = ast.parse(new)
    except SyntaxError as exc:
        return [], f"instrumented program does not parse: {exc.msg} (line {exc.lineno})"
    if ast.dump(_DropLines(inserted_at).visit(new_tree)) != ast.dump(original_tree):
        return [], "the inserted lines change the program's structure"
    return added, None


def instrument(
    code: str, model: ChatModel, *, max_tokens: int = 4096, temperature: float = 0.0
) -> InstrumentResult:
    """Ask `model` to add progress prints to `code`; keep `code` unchanged unless they verify."""
    if not code.strip():
        return InstrumentResult(code=code, ok=False, reason="empty program")
    messages = [
        Message(role="system", content=SYSTEM_PROMPT),
        Message(role="user", content=f"```python\n{code.rstrip()}\n```"),
    ]
    try:
        answer = model.complete(messages, max_tokens=max_tokens, temperature=temperature).text
    except ModelError as exc:
        return InstrumentResult(code=code, ok=False, reason=f"model failed: {exc}")
    new = extract_code(answer)
    if not new.strip():
        return InstrumentResult(code=code, ok=False, reason="the model's answer holds no program")
    added, problem = verify_instrumentation(code, new)
    if problem:
        return InstrumentResult(code=code, ok=False, reason=problem)
    if code.endswith("\n") and not new.endswith("\n"):
        new += "\n"
    return InstrumentResult(code=new, ok=True, added=added, markers=markers_in("\n".join(added)))
