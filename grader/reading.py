"""What the names in a notebook's code stand for, read statically (nothing is run or imported).

:func:`parse` reads a cell (IPython magic and shell lines as ``pass``; any parser failure, a cell over
``limits.MAX_READ_CHARS``, is a note, never an exception); :func:`bindings` follows imports (``as`` too), ``import *``
and plain aliases over every cell; :func:`names_used` gives the dotted name of every import and every
whole attribute chain of a cell (``getattr`` with a literal name counts as an attribute), and ``.name`` for
every attribute taken on what no binding names (``x.repeat_interleave``, ``(a @ b).softmax``): a method.
"""

from __future__ import annotations

import ast
import re

from grader import limits

MAGIC = re.compile(r"^(\s*)(?:[%!]|[\w.,\s\[\]]+=\s*[%!])")


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


def literal_getattr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))


def resolve(node: ast.AST, env: dict[str, set[str]], stars: list[str]) -> set[str]:
    """The dotted names an expression may stand for, from the bindings ``env`` (name -> dotted names)."""
    root, attrs = _chain(node)
    if not isinstance(root, ast.Name):
        return set()
    bases = env.get(root.id) or {f"{s}.{root.id}" for s in stars}
    return {".".join([b, *attrs]) for b in bases}


def _binds(node: ast.AST, env: dict, stars: list[str]):
    """(name, dotted name) pairs that ``node`` binds."""
    if isinstance(node, ast.Import):
        for a in node.names:
            yield (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for a in node.names:
            if a.name == "*":
                stars.append(node.module)
            else:
                yield a.asname or a.name, f"{node.module}.{a.name}"
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            pairs = [(target, node.value)]
            while pairs:
                t, v = pairs.pop()
                if isinstance(t, ast.Name):
                    yield from ((t.id, d) for d in resolve(v, env, stars))
                elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(v, (ast.Tuple, ast.List)):
                    pairs += list(zip(t.elts, v.elts, strict=False))  # unequal: a ValueError at run time


def bindings(nodes: list[ast.AST]) -> tuple[dict[str, set[str]], list[str]]:
    """What every name may stand for, over the nodes of every cell (aliases of aliases too), and the
    ``import *`` modules."""
    env: dict[str, set[str]] = {}
    stars: list[str] = []
    binders = [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign,
                                                  ast.NamedExpr))]
    for _ in range(limits.BINDING_PASSES):
        before = sum(map(len, env.values()))
        for node in binders:
            for name, dotted in _binds(node, env, stars):
                if len(env.setdefault(name, set())) < limits.MAX_BINDINGS:
                    env[name].add(dotted)
        if sum(map(len, env.values())) == before:
            break
    return env, list(dict.fromkeys(stars))


def index(tree: ast.AST) -> tuple[list[ast.AST], dict]:
    """Every node of ``tree`` (breadth first) and each node's parent, in one pass."""
    nodes, parents, at = [tree], {}, 0
    while at < len(nodes):
        for child in ast.iter_child_nodes(nodes[at]):
            parents[child] = nodes[at]
            nodes.append(child)
        at += 1
    return nodes, parents


def _maximal(node: ast.AST, parent: ast.AST | None) -> bool:
    """Whether ``node`` is a whole name or attribute chain (not the inside of a longer one)."""
    if not isinstance(node, (ast.Name, ast.Attribute)) and not literal_getattr(node):
        return False
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return False
    return not (literal_getattr(parent) and parent.args[0] is node)


def names_used(nodes: list[ast.AST], parents: dict, env: dict, stars: list[str]):
    """(line, dotted name) for every import and every whole name or attribute chain of the cell; (line,
    ``.attr``) for every attribute taken on something that is not a name the bindings know (a local
    variable, a call's result: a method, whatever its object)."""
    roots: dict = {}  # attribute -> the root of its chain, children first (breadth-first order reversed)
    for node in reversed(nodes):
        if isinstance(node, ast.Attribute) or literal_getattr(node):
            of = node.value if isinstance(node, ast.Attribute) else node.args[0]
            roots[node] = roots.get(of, of)
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            yield from ((line, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield line, node.module
            yield from ((line, f"{node.module}.{a.name}") for a in node.names if a.name != "*")
        else:
            if _maximal(node, parents.get(node)):
                yield from ((line, d) for d in sorted(resolve(node, env, stars)))
            if node in roots and not (isinstance(roots[node], ast.Name) and roots[node].id in env):
                yield line, "." + (node.attr if isinstance(node, ast.Attribute) else node.args[1].value)
