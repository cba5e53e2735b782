"""How the code hangs together: the package's imports form no cycle, the package never imports the exercises'
checks (``checks/``, which import it), nothing the grader runs imports the authors' tools (``tools/``: what both use
lives in ``layout/``, which imports neither), and nothing puts paths on sys.path by hand (the package, the checks,
the layout and the grader are installed; tools and benchmarks run as ``python -m tools.x`` and
``python -m benchmarks.bench``)."""

from __future__ import annotations

import ast
import re

from layout.paths import CHECKS, PACKAGE, ROOT
from tools.imports import import_graph, layers, module_name

CODE = ("transformer", "checks", "layout", "grader", "tools", "benchmarks")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 50
# A hidden-test module holds all of one assignment's tests, as the map of exercises (layout/exercises.py) says: an
# assignment is not split over modules to meet the cap (assignment 09's four exercises take about 400 lines).
MAX_ASSIGNMENT_LINES, ASSIGNMENT_MODULE = 420, re.compile(r"grader/hidden/a[0-9]{2}\.py")


def test_the_package_imports_form_no_cycle():
    graph = import_graph(PACKAGE, CHECKS)
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


def imported_packages(source: str, package: tuple[str, ...]) -> set[str]:
    """The top-level packages that ``source``, a module of ``package`` (``("grader", "hidden")``), imports: at its
    top or inside functions, relative imports resolved, and names given to ``importlib.import_module`` or
    ``__import__`` as a string."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            found.add((*base, *(node.module or "").split("."))[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name, called = node.args[0].value, getattr(node.func, "attr", getattr(node.func, "id", ""))
            if called in ("import_module", "__import__") and isinstance(name, str) and not name.startswith("."):
                found.add(name.split(".")[0])
    return found - {""}


def imports_in(folder: str) -> dict[str, set[str]]:
    """``{module's path: the top-level packages it imports}`` for every module in ``ROOT / folder``."""
    found = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT)
        found[relative.as_posix()] = imported_packages(path.read_text(encoding="utf-8"), relative.parts[:-1])
    return found


def test_imported_packages_are_found():
    assert imported_packages("def f():\n    from checks import a04\n", ("transformer",)) == {"checks"}
    assert imported_packages("from . import a04\nfrom ..mistakes import a04\n", ("checks", "mistakes")) == {"checks"}
    assert imported_packages("import importlib\nimportlib.import_module('checks.a04')\n", ("transformer",)) == {
        "importlib", "checks"}


def test_the_package_never_imports_the_checks():
    """The exercises' checks import the package, which they compare with; the package the chapters teach never
    imports the checks (no lazy ``T.checks`` either)."""
    assert any("transformer" in found for found in imports_in("checks").values())  # read right
    offenders = sorted(path for path, found in imports_in("transformer").items() if "checks" in found)
    assert not offenders, f"these modules of the package import the checks: {offenders}"
    graph = import_graph(PACKAGE, CHECKS)
    assert not {d for m, deps in graph.items() if m.startswith("transformer") for d in deps if d.startswith("checks")}


# The packages each top-level folder never imports. The grader, and what a graded kernel or the grader imports
# (the checks, the package), stand without the authors' tools; the course's layout, which the grader and the tools
# both read, imports neither of them, nor the package or the checks (the map names the checks and the hidden tests,
# and imports neither side of the trust boundary).
NEVER_IMPORTS = {"grader": {"tools"}, "checks": {"tools"}, "transformer": {"tools", "checks"},
                 "layout": {"tools", "grader", "checks", "transformer"}}


def test_the_grader_and_what_it_reads_never_import_the_authors_tools():
    assert any("layout" in found for found in imports_in("grader").values())  # read right: the grader reads it
    assert any("layout" in found for found in imports_in("tools").values())  # and so do the tools
    offenders = {path: sorted(found & banned) for folder, banned in NEVER_IMPORTS.items()
                 for path, found in imports_in(folder).items() if found & banned}
    assert not offenders, offenders


def test_nothing_puts_paths_on_sys_path():
    offenders = []
    for folder in ("transformer", "checks", "layout", "tests", "benchmarks", "tools", "grader"):
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("tests/hostile/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys":
                    offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, offenders


def test_the_architecture_page_draws_the_layers_of_the_lectures():
    rows, edges = layers(import_graph(PACKAGE, CHECKS))
    row = {m: i for i, r in enumerate(rows) for m in r}
    assert {"tokenization", "embedding", "positional", "feedforward", "masks"} <= set(rows[0])
    assert row["masks"] < row["attention"] < row["multihead"] < row["blocks"] < row["model"]
    assert row["blocks"] < row["hooks"]
    assert "_validate" not in row and not any(m.startswith(("viz", "checks")) for m in row)
    for m, deps in edges.items():  # every line goes down; viz and checks, drawn on top, only import the core
        assert all(row[d] < row.get(m, len(rows)) for d in deps), (m, deps)
    assert {"hooks", "train"} <= edges["viz"] and "model" in edges["checks"]


def test_no_module_or_function_is_too_long():
    """One screen per idea: modules of at most 300 lines (an assignment's hidden tests: 420), functions of at most
    50."""
    long = []
    for folder in CODE:
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            relative = path.relative_to(ROOT).as_posix()
            cap = MAX_ASSIGNMENT_LINES if ASSIGNMENT_MODULE.fullmatch(relative) else MAX_MODULE_LINES
            if len(text.splitlines()) > cap:
                long.append(f"{relative}: {len(text.splitlines())} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    size = node.end_lineno - node.lineno + 1
                    if size > MAX_FUNCTION_LINES:
                        long.append(f"{relative}:{node.lineno} {node.name}(): {size} lines")
    assert not long, long


def checks_above_their_callers(source: str) -> list[str]:
    """The argument checks (``_check_*``, ``_require_*``) of a module defined above a function that calls them."""
    tree = ast.parse(source)
    checks = {node.name: node.lineno for node in tree.body
              if isinstance(node, ast.FunctionDef) and node.name.startswith(("_check", "_require"))}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name not in checks:  # a check may call another anywhere
            for call in ast.walk(node):
                name = getattr(getattr(call, "func", None), "id", None) if isinstance(call, ast.Call) else None
                if name in checks and checks[name] < node.lineno:
                    found.append(f"{name} (line {checks[name]}) above {node.name} (line {node.lineno})")
    return found


def test_argument_checks_sit_below_the_code_they_guard():
    """A module of the package opens on its ideas; its own checks come at its end (CONTRIBUTING.md)."""
    assert checks_above_their_callers("def _check_x(x): ...\n\ndef f(x):\n    _check_x(x)\n")  # it can fail
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):  # not checks/: there a _check_* is a part of a check
        if found := checks_above_their_callers(path.read_text(encoding="utf-8")):
            offenders[str(path.relative_to(ROOT))] = found
    assert not offenders, offenders


# Underscore names that one module of the package imports from another although they are not the core of a public
# function of the same name, each with its reason (CONTRIBUTING.md, "Argument checks").
SHARED_UNDERSCORE_NAMES = {
    ("transformer.sampling", "_require_settings"): "the check of the sampling settings, which decoding.generate "
                                                   "makes once for all its steps before it calls the cores",
    ("transformer.decoding", "_max_len_renamed"): "the decorator that refuses the old keyword max_len, on the "
                                                  "decoding functions and on train.translate",
}


def underscore_imports(package) -> list[tuple[str, str, str]]:
    """``(importer, module, name)`` for every ``from module import _name`` between two modules of the package."""
    root, found = package.parent, []
    for path in sorted(package.rglob("*.py")):
        importer = module_name(path, root)
        here = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if module.split(".")[0] != package.name:
                continue
            found += [(importer, module, a.name) for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def top_level_names(package, module: str) -> set[str]:
    """The functions, classes and assigned names defined at the top of ``module``."""
    path = package.parent.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_an_underscore_name_crosses_modules_only_as_a_core():
    """A leading underscore means private, except for a core: the unchecked function beside its public, checked
    namesake (``_scaled_dot_product_attention`` beside ``scaled_dot_product_attention``), which other modules of the
    package call once they have checked their arguments. Any other underscore name imported across modules is
    listed above with its reason (CONTRIBUTING.md, "Argument checks")."""
    found = underscore_imports(PACKAGE)
    assert ("transformer.multihead", "transformer.attention", "_scaled_dot_product_attention") in found  # read right
    offenders = []
    for importer, module, name in found:
        if (module, name) in SHARED_UNDERSCORE_NAMES:
            continue
        defined = top_level_names(PACKAGE, module)
        if name not in defined or name[1:] not in defined:
            offenders.append(f"{importer} imports {name} from {module}, which has no public {name[1:]} beside it")
    assert not offenders, offenders
    listed_unused = set(SHARED_UNDERSCORE_NAMES) - {(module, name) for _, module, name in found}
    assert not listed_unused, f"listed but imported by no other module: {sorted(listed_unused)}"


# ------------------------------------------------------------------ one name, one meaning: import aliases

SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _in_scope(node):
    """The nodes of ``node``'s own scope (nested functions and classes left out)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, SCOPES):
            yield from _in_scope(child)


def _aliases(scope) -> set[str]:
    return {a.asname for n in _in_scope(scope) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names
            if a.asname}


def rebound_aliases(source: str) -> list[str]:
    """Import aliases (``import transformer as T``) that a scope where they are visible also binds as a variable,
    parameter or loop name: one name standing for a module and for a value (``T``, a temperature, a length)."""
    tree = ast.parse(source)
    module = _aliases(tree)
    found = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, SCOPES[1:]))]:
        bound = {n.id for n in _in_scope(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            bound |= {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
        found += [f"{getattr(scope, 'name', '<module>')}: {a}" for a in sorted((module | _aliases(scope)) & bound)]
    return found


def test_rebound_aliases_are_found():
    assert rebound_aliases("import transformer as T\nT = 4\n") == ["<module>: T"]
    assert rebound_aliases("import transformer as T\ndef f(x, T=1.0):\n    return x / T\n") == ["f: T"]
    assert rebound_aliases("def f():\n    import ipywidgets as w\n    return w\ndef g(w):\n    return w\n") == []


def test_no_import_alias_is_also_a_variable():
    """In the package, the checks, the layout, the grader, the tools, the tests and every notebook (chapters and
    solutions)."""
    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    sources = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
               for folder in (*CODE, "tests") for p in (ROOT / folder).rglob("*.py") if "hostile" not in p.parts}
    for p in [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "solutions").glob("*/*.ipynb")]:
        cells = nbformat.read(p, as_version=4).cells
        sources[p.name] = "\n".join(TransformerManager().transform_cell(c.source) for c in cells
                                    if c.cell_type == "code")
    found = {path: rebound for path, text in sources.items() if (rebound := rebound_aliases(text))}
    assert not found, found
