"""The house's measured limits: no import cycle among the package's modules at import time,
no module over :data:`MAX_MODULE_LINES` lines and no function over :data:`MAX_FUNCTION_LINES`
in the package and the experiments.

A module-level import of a sibling that (directly or through others) imports the first one
back works only in some import orders; imports inside functions are deferred and not edges
here. A module's own enclosing packages are not edges either: they are being imported
already when it runs.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "jaxmarl_accel"
SOURCES = (ROOT, ROOT.parent / "experiments")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def module_names() -> dict[str, pathlib.Path]:
    """Dotted module name -> file, packages by their ``__init__.py``."""
    names = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(node: ast.stmt, module: str, is_package: bool) -> list[str]:
    """The dotted names a module-level import statement of ``module`` names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports at module level (nearest existing name)."""
    names = module_names()
    graph: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        for node in ast.parse(path.read_text()).body:
            for target in imported(node, name, path.name == "__init__.py"):
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_package_modules():
    graph = import_graph()
    assert "jaxmarl_accel.trainer.train" in graph and graph["jaxmarl_accel.trainer.train"]
    assert cycles(graph) == []


def oversized(paths: list[pathlib.Path]) -> list[str]:
    """``"file: N lines"`` for each module over :data:`MAX_MODULE_LINES` and
    ``"file:function: N lines"`` for each function (at any depth) over
    :data:`MAX_FUNCTION_LINES` among ``paths``."""
    found = []
    for path in paths:
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path.name}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path.name}:{node.name}: {length} lines")
    return found


def test_the_size_check_finds_long_functions_and_modules(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n")
    (tmp_path / "short.py").write_text("def g():\n    return 1\n")
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    found = oversized(sorted(tmp_path.glob("*.py")))
    assert found == [f"big.py: {MAX_MODULE_LINES + 1} lines",
                     f"long.py:f: {MAX_FUNCTION_LINES + 1} lines"]


def test_no_module_or_function_over_the_limits():
    paths = [path for root in SOURCES for path in sorted(root.rglob("*.py"))]
    assert len(paths) > 100
    assert oversized(paths) == []
