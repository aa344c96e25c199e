"""The layout keeps its promises: no import circles, thin old names, the CLI's one-way imports.

The import graph is read from the source (ast), not by importing anything. An edge is an
import statement of one of our modules naming another: at module level (it runs on import),
inside a function (it runs on call), or under `if TYPE_CHECKING:` (it never runs). A name taken
from a package resolves to the module that defines it where the package's __init__ re-exports
it, so `from mlagent_tui.core.tasks import find_task` depends on tasks/__init__ and tasks/spec.
Circles are looked for among the imports that run (module and function level); the
TYPE_CHECKING ones are checked apart.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mlagent_tui", "trainer")
RUNTIME = ("module", "function")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


def _modules() -> dict[str, Module]:
    found = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = Module(name, path, is_package)
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: Module) -> list[tuple[str, list[str], str, int]]:
    """(absolute module, names taken from it, level, line) for each import statement."""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    found: list[tuple[str, list[str], str, int]] = []

    def visit(node: ast.AST, level: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = level
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = "function" if level == "module" else level
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), "type")
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), level)
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, [], inner, child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                found.append((target, [a.name for a in child.names], inner, child.lineno))
            visit(child, inner)

    visit(ast.parse(module.path.read_text(), str(module.path)), "module")
    return found


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _reexports(package: str) -> dict[str, str]:
    """Names a package's __init__ takes from its own modules (eagerly or for lazy loading)."""
    out: dict[str, str] = {}
    for target, names, _, _ in _imports(MODULES[package]):
        if target.startswith(package + ".") and _known(target) == target:
            out.update(dict.fromkeys(names, target))
    return out


def import_graph() -> dict[str, dict[str, tuple[str, int]]]:
    """module -> {imported module: (strongest level, line)}; levels: module > function > type."""
    rank = {"module": 0, "function": 1, "type": 2}
    graph: dict[str, dict[str, tuple[str, int]]] = {name: {} for name in MODULES}
    for name, module in MODULES.items():
        edges = graph[name]
        for target, names, level, line in _imports(module):
            targets = []
            for taken in names or [""]:
                full = _known(f"{target}.{taken}" if taken else target)
                if full is None:
                    continue
                targets.append(full)
                if full == target and MODULES[full].is_package and taken:
                    defining = _reexports(full).get(taken)
                    if defining:
                        targets.append(defining)
            for full in targets:
                if full == name:
                    continue
                if module.is_package and level == "type" and full.startswith(name + "."):
                    continue  # only shows type checkers the names the package loads lazily
                if full not in edges or rank[level] < rank[edges[full][0]]:
                    edges[full] = (level, line)
    return graph


def cycles(levels: tuple[str, ...]) -> list[list[str]]:
    """Every strongly connected group of two or more modules, over edges of `levels`."""
    graph = {
        name: sorted(t for t, (level, _) in edges.items() if level in levels)
        for name, edges in import_graph().items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def describe(group: list[str], levels: tuple[str, ...] = RUNTIME) -> str:
    """The shortest circle through the group's first module, each import with its level and line."""
    graph = {
        name: {t: edge for t, edge in edges.items() if t in group and edge[0] in levels}
        for name, edges in import_graph().items()
        if name in group
    }
    start = group[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while start not in came_from:  # breadth first, so the circle found is a shortest one
        reached = []
        for here in frontier:
            for there in sorted(graph[here]):
                if there not in came_from:
                    came_from[there] = here
                    reached.append(there)
        frontier = reached
    path, here = [start], came_from[start]
    while here != start:
        path.append(here)
        here = came_from[here]
    path.append(start)
    path.reverse()
    steps = [
        f"{a} ({graph[a][b][0]} import, line {graph[a][b][1]})"
        for a, b in zip(path[:-1], path[1:], strict=True)
    ]
    return " -> ".join([*steps, start])


def test_the_graph_sees_the_imports_it_should() -> None:
    graph = import_graph()
    assert graph["mlagent_tui.cli.tasks"]["mlagent_tui.cli.options"][0] == "module"
    assert graph["mlagent_tui.core.session.run"]["mlagent_tui.core.session.step"][0] == "module"
    # a name a lazy package hands on resolves to the module that defines it
    assert "mlagent_tui.core.tasks.spec" in graph["mlagent_tui.core.session.run"]
    assert graph["mlagent_tui.cli.tui"]["mlagent_tui.tui"][0] == "function"
    assert graph["mlagent_tui.core.session.step"]["mlagent_tui.core.session.parts"][0] == "type"


def test_no_import_circles() -> None:
    """No two modules import each other, directly or around a circle, at import or call time."""
    found = [describe(group) for group in cycles(RUNTIME)]
    assert not found, "import circles:\n" + "\n".join(found)


def test_no_circles_even_through_type_only_imports() -> None:
    """With the TYPE_CHECKING imports too there is no circle: step.py, end.py and budget.py hold
    functions of the Session (split off for size) and name it as session.parts.SessionParts, a
    Protocol below them, never run.Session."""
    found = [describe(group) for group in cycles((*RUNTIME, "type"))]
    assert not found, "import circles through type-only imports:\n" + "\n".join(found)


def test_command_modules_import_options_never_main() -> None:
    graph = import_graph()
    for name in MODULES:
        if name.startswith("mlagent_tui.cli.") and name != "mlagent_tui.cli.main":
            assert "mlagent_tui.cli.main" not in graph[name], name


def test_every_package_says_what_it_is_and_its_names_resolve() -> None:
    for module in MODULES.values():
        if not module.is_package:
            continue
        doc = ast.get_docstring(ast.parse(module.path.read_text()))
        assert doc and doc.splitlines()[0].strip(), f"{module.name}: no docstring"
        try:
            package = importlib.import_module(module.name)
        except ModuleNotFoundError as exc:  # an optional extra (torch, ...) not installed
            if exc.name and exc.name.split(".")[0] in PACKAGES:
                raise
            continue
        for public in getattr(package, "__all__", []):
            assert getattr(package, public) is not None, f"{module.name}.{public}"
