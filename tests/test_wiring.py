"""How the code hangs together: the package's imports form no cycle, and nothing puts paths on sys.path by hand
(the package is installed; tools and benchmarks run as ``python -m tools.x`` and ``python -m benchmarks.bench``)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "transformer"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in it (inside functions too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:  # `from . import viz` imports the module transformer.viz
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
    return {m for m in found if m in modules and m != name}


def test_the_package_imports_form_no_cycle():
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: imports_of(path, set(paths)) for name, path in paths.items()}
    assert graph["transformer.viz.training"] >= {"transformer.train"}  # the graph is read right ...
    assert "transformer.viz.training" not in graph["transformer.train"]  # ... and training calls back instead

    done, on_path = set(), []

    def visit(name: str) -> None:
        if name in on_path:
            cycle = on_path[on_path.index(name):] + [name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        on_path.append(name)
        for other in sorted(graph[name]):
            visit(other)
        on_path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_nothing_puts_paths_on_sys_path():
    offenders = []
    for folder in ("transformer", "tests", "benchmarks", "tools", "grader"):
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("tests/hostile/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys":
                    offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, offenders
