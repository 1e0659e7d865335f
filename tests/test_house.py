"""The house's measured limits: no import cycle among the modules of the package and of the
experiments (a failing test), and a report (a warning, not a failure) of every module over
:data:`MAX_MODULE_LINES` lines and every function over :data:`MAX_FUNCTION_LINES` in either:
a long module or function is a prompt to split it by idea, not a reason to squeeze it.

Every import statement is an edge, at module level or inside a function: a function-level
import only defers the cycle to the first call, where it works or fails by which module was
imported first. A module's own enclosing packages are not edges: they are being imported
already when it runs. Imports inside functions remain only to defer a heavy module to the
call that needs it (the ``run`` command loads no JAX before ``jax.distributed.initialize()``
can run, tested below; the trainer, orbax, matplotlib) or an optional one (wandb,
tensorboardX, fsspec, JaxMARL); the graph holds them all, so none of them closes a circle.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent / "jaxmarl_accel"
SOURCES = (ROOT, ROOT.parent / "experiments")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def module_names(roots: tuple[pathlib.Path, ...]) -> dict[str, pathlib.Path]:
    """Dotted module name -> file for every module under the package folders ``roots``,
    packages by their ``__init__.py``."""
    names = {}
    for root in roots:
        for path in root.rglob("*.py"):
            parts = path.relative_to(root.parent).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement of ``module`` names (any other node: none)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph(roots: tuple[pathlib.Path, ...] = SOURCES) -> dict[str, set[str]]:
    """Module -> the modules under ``roots`` it imports anywhere in its text, at module level
    or inside a function (each named by its nearest existing module)."""
    names = module_names(roots)
    graph: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        for node in ast.walk(ast.parse(path.read_text())):
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


def test_the_graph_holds_imports_inside_functions(tmp_path):
    package = tmp_path / "toy"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "__init__.py").write_text("")
    (package / "top.py").write_text("import json\n\nfrom toy.inner import leaf\n")
    (package / "inner" / "leaf.py").write_text(
        "def late():\n    from ..top import late_name\n    return late_name\n")
    (package / "alone.py").write_text("def f():\n    import toy.top\n")
    graph = import_graph((package,))
    assert graph["toy.inner.leaf"] == {"toy.top"}  # relative, inside a function
    assert graph["toy.alone"] == {"toy.top"}
    assert cycles(graph) == [["toy.inner.leaf", "toy.top"]]
    (package / "inner" / "leaf.py").write_text("def late():\n    return 1\n")
    assert cycles(import_graph((package,))) == []


def test_no_import_cycle_in_the_package_or_the_experiments():
    graph = import_graph()
    assert graph["jaxmarl_accel.trainer.train"]
    assert "experiments.bench.qmix_smax" in graph
    assert "jaxmarl_accel.runs.host_loop" in graph["jaxmarl_accel.cli.run"]  # in main()
    assert cycles(graph) == []


def test_the_run_command_loads_no_jax_at_import():
    """``jaxmarl-accel run --distributed`` parses its flags and calls
    ``jax.distributed.initialize()`` before anything of JAX's runs: the command's module and
    the dispatcher defer JAX, the scenarios and the trainer to the calls that need them."""
    code = ("import sys, jaxmarl_accel.cli.__main__, jaxmarl_accel.cli.run; "
            "print(sorted(m for m in ('jax', 'jaxmarl_accel.envs', 'jaxmarl_accel.trainer') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def oversized(paths: list[pathlib.Path]) -> list[str]:
    """``"file: N lines"`` for each module over :data:`MAX_MODULE_LINES` and
    ``"file:function: N lines"`` for each function (at any depth) over
    :data:`MAX_FUNCTION_LINES` among ``paths``; a file is named by its path in the
    repository (by its name outside it)."""
    found = []
    for path in paths:
        name = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT.parent) else path.name
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.name}: {length} lines")
    return found


def test_the_size_check_finds_long_functions_and_modules(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n")
    (tmp_path / "short.py").write_text("def g():\n    return 1\n")
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    found = oversized(sorted(tmp_path.glob("*.py")))
    assert found == [f"big.py: {MAX_MODULE_LINES + 1} lines",
                     f"long.py:f: {MAX_FUNCTION_LINES + 1} lines"]


def test_modules_and_functions_over_the_limits_are_reported():
    """Reported in pytest's warnings summary (and printed, seen with ``-s``), never failed."""
    paths = [path for root in SOURCES for path in sorted(root.rglob("*.py"))]
    assert len(paths) > 100
    found = oversized(paths)
    if found:
        report = (f"over the house's limits ({MAX_MODULE_LINES} lines a module, "
                  f"{MAX_FUNCTION_LINES} a function): " + "; ".join(found))
        print(report)
        warnings.warn(report, UserWarning, stacklevel=1)
