"""What the names in a notebook's code stand for, read statically (nothing is run or imported).

:func:`parse` reads a cell (IPython magic and shell lines as ``pass``; any parser failure, a cell over
``limits.MAX_READ_CHARS``, is a note, never an exception); :func:`bindings` follows imports (``as`` too), ``import *``
and plain aliases over every cell, each name in its own scope: a function's parameters and locals, a class body, a
comprehension hide the module's names (``x = math`` at the top does not make a parameter ``x`` the module), and a
name bound to anything the reader cannot name (a parameter, a call's result, a loop's variable) may stand for an
unknown object. :func:`names_used` gives the dotted name of every import and every whole attribute chain of a cell
(``getattr`` with a literal name counts as an attribute), and ``.name`` for every attribute taken on what may be an
unknown object (``x.repeat_interleave``, ``(a @ b).softmax``): a method.
"""

from __future__ import annotations

import ast
import re

from grader import limits

MAGIC = re.compile(r"^(\s*)(?:[%!]|[\w.,\s\[\]]+=\s*[%!])")
MODULE = "module"  # the notebook's one global scope: the top level of every cell
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
SCOPES = (*FUNCTIONS, ast.ClassDef, *COMPREHENSIONS)
UNKNOWN = None  # in what a name may stand for: an object the reader cannot name


def parse(source: str) -> tuple[ast.AST | None, list[tuple[int, str]]]:
    """The cell's syntax tree (IPython magic and shell lines read as ``pass``) and what could not be read."""
    if len(source) > limits.MAX_READ_CHARS:
        return None, [(0, f"too long to read ({len(source)} characters)")]
    lines, magics = [], []
    for i, line in enumerate(source.split("\n"), 1):
        magic = MAGIC.match(line)
        lines.append(magic.group(1) + "pass" if magic else line)
        magics += [i] if magic else []
    many = f"{len(magics)} IPython magic or shell lines" if len(magics) > 1 else "an IPython magic or shell line"
    notes = [(magics[0], many)] if magics else []
    try:
        return ast.parse("\n".join(lines)), notes
    except Exception as exc:  # noqa: BLE001 - SyntaxError, MemoryError, RecursionError, ValueError: never fatal
        return None, [*notes, (getattr(exc, "lineno", None) or 0, f"not plain Python ({type(exc).__name__})")]


SHARED = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)  # one object for every use: no parent


def index(tree: ast.AST) -> tuple[list[ast.AST], dict]:
    """Every node of ``tree`` (breadth first; not the shared ``Load``, ``Add``, ...) and each node's parent."""
    nodes, parents, at = [tree], {}, 0
    while at < len(nodes):
        for child in ast.iter_child_nodes(nodes[at]):
            if isinstance(child, SHARED):
                continue
            parents[child] = nodes[at]
            nodes.append(child)
        at += 1
    return nodes, parents


def literal_getattr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))


def _chain(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """The root of an attribute chain (``getattr(x, "literal")`` counts as ``x.literal``) and its names."""
    attrs = []
    while True:
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif literal_getattr(node):
            attrs.append(node.args[1].value)
            node = node.args[0]
        else:
            return node, attrs[::-1]


# ------------------------------------------------------------------ scopes


def _outside(node: ast.AST) -> list[ast.AST]:
    """The parts of a scope's node that run in the scope around it: decorators, defaults, annotations, bases, a
    comprehension's first iterable."""
    if isinstance(node, FUNCTIONS):
        a = node.args
        parts = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
        if not isinstance(node, ast.Lambda):
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            parts += [*node.decorator_list, *([node.returns] if node.returns else []),
                      *(p.annotation for p in params if p is not None and p.annotation is not None)]
        return parts
    if isinstance(node, ast.ClassDef):
        return [*node.bases, *node.keywords, *node.decorator_list]
    return [node.generators[0].iter] if isinstance(node, COMPREHENSIONS) else []


def _params(node: ast.AST) -> list[tuple[ast.arg, ast.AST | None]]:
    """(parameter, its default or None) of a function or lambda."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    return [*zip(positional, defaults, strict=True), *zip(a.kwonlyargs, a.kw_defaults, strict=True),
            *((p, None) for p in (a.vararg, a.kwarg) if p is not None)]


class Names:
    """What every name of a notebook may stand for, in each scope (:func:`bindings` makes it)."""

    def __init__(self):
        self.scope: dict = {}      # node -> the scope it runs in (MODULE or a scope's node)
        self.up: dict = {}         # scope -> the scope around it
        self.local: dict = {MODULE: set()}  # scope -> the names bound in it
        self.env: dict = {MODULE: {}}       # scope -> name -> dotted names it may stand for (UNKNOWN too)
        self.stars: list[str] = []  # the modules of ``from ... import *``

    def lookup(self, name: str, scope) -> set | None:
        """What ``name`` may stand for where ``scope`` reads it (a class body is skipped from inside its methods),
        or None when no cell binds it (a builtin, or a name from ``import *``)."""
        first = True
        while scope != MODULE:
            if (first or not isinstance(scope, ast.ClassDef)) and name in self.local[scope]:
                return self.env[scope].get(name, {UNKNOWN})
            scope, first = self.up[scope], False
        return self.env[MODULE].get(name, {UNKNOWN}) if name in self.local[MODULE] else None

    def resolve(self, node: ast.AST) -> tuple[set[str], bool]:
        """The dotted names an expression may stand for, and whether it may be an object the reader cannot name."""
        root, attrs = _chain(node)
        if not isinstance(root, ast.Name):
            return set(), True
        bound = self.lookup(root.id, self.scope.get(root, MODULE))
        bases = {f"{s}.{root.id}" for s in self.stars} if bound is None else bound - {UNKNOWN}
        return {".".join([b, *attrs]) for b in bases}, bound is None or UNKNOWN in bound


def _scopes(names: Names, nodes: list[ast.AST], parents: dict) -> None:
    """Each node's scope, breadth first (a parent's before its children's)."""
    outside = {}
    for node in nodes:
        parent = parents.get(node)
        if parent is None:
            scope = MODULE
        elif node in outside:
            scope = names.scope[outside[node]]
        else:
            scope = parent if isinstance(parent, SCOPES) else names.scope[parent]
        names.scope[node] = scope
        if isinstance(node, SCOPES):
            names.up[node], names.local[node], names.env[node] = scope, set(), {}
            outside.update((part, node) for part in _outside(node))


def _binders(names: Names, nodes: list[ast.AST], parents: dict) -> list[tuple]:
    """(scope, name, what it is bound to: a dotted name, an expression, or UNKNOWN) of every binding in ``nodes``,
    in the scope it binds in; the names each scope binds go into ``names.local``."""
    found, declared, assigned = [], {}, set()
    for node in nodes:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            declared.setdefault((names.scope[node], kind), set()).update(node.names)
    for node in nodes:  # breadth first: an assignment before its targets
        if isinstance(node, ast.Import):
            found += [(node, a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                      for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == "*" and node.module and not node.level:
                    names.stars.append(node.module)
                elif a.name != "*":
                    found.append((node, a.asname or a.name,
                                  f"{node.module}.{a.name}" if node.module and not node.level else UNKNOWN))
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            found += [(node, node.name, UNKNOWN)] if not isinstance(node, ast.Lambda) else []
            if not isinstance(node, ast.ClassDef):  # a parameter: its default, or whatever the caller passes
                found += [(p, p.arg, d) for p, d in _params(node)]
                found += [(p, p.arg, UNKNOWN) for p, d in _params(node) if d]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs = [(t, node.value) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
            while pairs:
                t, v = pairs.pop()
                if isinstance(t, (ast.Tuple, ast.List)) and isinstance(v, (ast.Tuple, ast.List)) \
                        and len(t.elts) == len(v.elts):
                    pairs += list(zip(t.elts, v.elts, strict=True))
                elif isinstance(t, ast.Name):
                    found.append((t, t.id, v))
                    assigned.add(t)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node not in assigned:
            found.append((node, node.id, UNKNOWN))  # loops, with, unpacking, del: nothing the reader can name
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            found.append((node, node.name, UNKNOWN))
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.append((node, node.rest, UNKNOWN))
    return _placed(names, found, declared, parents)


def _placed(names: Names, found: list[tuple], declared: dict, parents: dict) -> list[tuple]:
    """(scope, name, what) of each binding ``found`` (node, name, what), in the scope it binds in: a walrus in a
    comprehension binds around it, ``global`` and ``nonlocal`` where they say."""
    out = []
    for node, name, what in found:
        home = names.scope[node]
        while isinstance(parents.get(node), ast.NamedExpr) and isinstance(home, COMPREHENSIONS):
            home = names.up[home]  # a walrus in a comprehension binds in the scope around it
        if name in declared.get((home, "global"), ()):
            home = MODULE
        elif name in declared.get((home, "nonlocal"), ()):
            home = names.up[home]
            while home != MODULE and (isinstance(home, ast.ClassDef) or name not in names.local[home]):
                home = names.up[home]
        names.local[home].add(name)
        out.append((home, name, what))
    return out


def bindings(trees: list[tuple[list[ast.AST], dict]]) -> Names:
    """What every name may stand for, in each scope, over the (nodes, parents) of every cell (aliases of aliases
    too, ``limits.BINDING_PASSES`` deep)."""
    names = Names()
    binders = []
    for nodes, parents in trees:
        _scopes(names, nodes, parents)
    for nodes, parents in trees:
        binders += _binders(names, nodes, parents)
    names.stars = list(dict.fromkeys(names.stars))
    for _ in range(limits.BINDING_PASSES):
        changed = False
        for home, name, what in binders:
            if isinstance(what, ast.AST):
                dotted, unknown = names.resolve(what)
                dotted |= {UNKNOWN} if unknown else set()
            else:
                dotted = {what}
            held = names.env[home].setdefault(name, set())
            for d in dotted - held:
                if len(held) < limits.MAX_BINDINGS:
                    held.add(d)
                    changed = True
        if not changed:
            break
    return names


# ------------------------------------------------------------------ what a cell uses


def _maximal(node: ast.AST, parent: ast.AST | None) -> bool:
    """Whether ``node`` is a whole name or attribute chain (not the inside of a longer one)."""
    if not isinstance(node, (ast.Name, ast.Attribute)) and not literal_getattr(node):
        return False
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return False
    return not (literal_getattr(parent) and parent.args[0] is node)


def names_used(nodes: list[ast.AST], parents: dict, names: Names):
    """(line, dotted name) for every import and every whole name or attribute chain of the cell; (line,
    ``.attr``) for every attribute taken on what may be an object no name stands for (a parameter, a local
    variable, a call's result: a method, whatever its object)."""
    roots: dict = {}  # attribute -> the root of its chain, children first (breadth-first order reversed)
    for node in reversed(nodes):
        if isinstance(node, ast.Attribute) or literal_getattr(node):
            of = node.value if isinstance(node, ast.Attribute) else node.args[0]
            roots[node] = roots.get(of, of)
    unknown: dict = {}  # root -> whether it may be an unknown object
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            yield from ((line, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield line, node.module
            yield from ((line, f"{node.module}.{a.name}") for a in node.names if a.name != "*")
        else:
            if _maximal(node, parents.get(node)):
                yield from ((line, d) for d in sorted(names.resolve(node)[0]))
            if node in roots:
                root = roots[node]
                if root not in unknown:
                    unknown[root] = names.resolve(root)[1] if isinstance(root, ast.Name) else True
                if unknown[root]:
                    yield line, "." + (node.attr if isinstance(node, ast.Attribute) else node.args[1].value)
