"""How the code hangs together: the package's imports form no cycle, the package never imports the exercises'
checks (``checks/``, which import it), nothing the grader runs imports the authors' tools (``tools/``: what both use
lives in ``layout/``, which imports neither), and nothing puts paths on sys.path by hand (the package, the checks,
the layout and the grader are installed; tools and benchmarks run as ``python -m tools.x`` and
``python -m benchmarks.bench``)."""

from __future__ import annotations

import ast

from layout.paths import CHECKS, PACKAGE, ROOT
from tools.imports import import_graph, layers, module_name

CODE = ("transformer", "checks", "layout", "grader", "tools", "benchmarks")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 50


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
    """One screen per idea: modules of at most 300 lines (an assignment's hidden tests too: its generators, named by
    the map of exercises, stay in ``grader/hidden/aNN.py``, and judges of one exercise may sit in a sibling module
    such as ``a09_head.py``), functions of at most 50."""
    long = []
    for folder in CODE:
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            relative = path.relative_to(ROOT).as_posix()
            if len(text.splitlines()) > MAX_MODULE_LINES:
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


# A leading underscore means private to its module (CONTRIBUTING.md, "Argument checks"). The one module whose own name
# starts with an underscore, transformer/_validate.py, holds the argument checks every module shares; its functions
# have public names (require_*), and the module is private so that it stays out of the package's API and the
# architecture page. No name is shared otherwise: a function, method or attribute that another module needs has a
# public name that says what it is (attend, softmax_over_allowed, RotaryEmbedding.rotate, ...).
SHARED_PRIVATE_MODULES = {"transformer._validate"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_definitions(package) -> dict[str, set[str]]:
    """``{_name: modules}``: where each underscore function, class, method or attribute of the package is defined
    (a ``def``, a ``class``, an assignment to a name or to ``obj._name``)."""
    root, defined = package.parent, {}
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names = [node.attr]
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names = [node.id]
            for name in filter(_private, names):
                defined.setdefault(name, set()).add(module)
    return defined


def private_names_used_across_modules(package) -> list[str]:
    """Every ``from .module import _name`` of another module of the package, and every ``x._name`` read in a module
    that does not define ``_name`` itself while another module of the package does (``self.rope._rotate`` in
    multihead, ``self._layout`` inherited from another module's base class). Underscore names that no module of the
    package defines (a library's own, such as ipywidgets' ``_options_labels``) are not the package's to rename."""
    root, defined, found = package.parent, private_definitions(package), []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, root)
        here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                if source.split(".")[0] == package.name and source != module:
                    found += [f"{module}:{node.lineno} imports {a.name} from {source}" for a in node.names
                              if _private(a.name) and f"{source}.{a.name}" not in SHARED_PRIVATE_MODULES]
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                owners = defined.get(node.attr, set())
                if owners and module not in owners and not _is_shared_module(node.value, package):
                    found.append(f"{module}:{node.lineno} uses {ast.unparse(node)}, defined in {sorted(owners)}")
    return found


def _is_shared_module(node, package) -> bool:
    return isinstance(node, ast.Name) and f"{package.name}.{node.id}" in SHARED_PRIVATE_MODULES


def test_an_underscore_name_stays_in_its_module(tmp_path):
    """No module of the package uses an underscore name that another module defines."""
    package = tmp_path / "pkg"  # the scan can fail: an import, a method of another module, an inherited helper
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def _core(x):\n    return x\n\nclass Rope:\n    def _rotate(self, x):\n"
                                  "        return x\n")
    (package / "b.py").write_text("from .a import _core\n\nclass Layer:\n    def f(self, x):\n"
                                  "        return self.rope._rotate(_core(x))\n")
    found = private_names_used_across_modules(package)
    assert any("imports _core from pkg.a" in f for f in found) and any("self.rope._rotate" in f for f in found)
    offenders = private_names_used_across_modules(PACKAGE)
    assert not offenders, offenders


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
