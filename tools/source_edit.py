"""Edits of the Python sources that name an exercise, for ``tools/new_exercise.py``: each finds its place with
``ast`` (the statement, the dict, the call) and writes lines in the style of the lines around them."""

from __future__ import annotations

import ast
from pathlib import Path

from tools import exercise_stubs as stubs
from tools.exercise_stubs import Plan

WIDTH = 120  # pyproject's line length


def top_level(tree: ast.Module, target: str) -> ast.stmt:
    """The top-level assignment to ``target``."""
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            names = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == target for t in names):
                return node
    raise LookupError(f"no top-level {target} = ...")


def _insert(lines: list[str], at: int, text: str) -> None:
    lines[at:at] = text.splitlines(keepends=True)


def type_order(name: str) -> tuple:
    """ruff's isort order of imported names: CONSTANTS, then Classes, then the rest."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def add_import(source: str, module: str, names: list[str], level: int = 0) -> str:
    """``source`` with ``names`` added to its ``from module import ...`` (one line, or one name a line when long)."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == module and n.level == level)
    have = [a.name for a in node.names]
    if set(names) <= set(have):
        return source
    every = sorted({*have, *names}, key=type_order)
    head = f"from {'.' * level}{module} import "
    line = head + ", ".join(every) + "\n"
    if len(line) > WIDTH + 1:
        line = head + "(\n" + "".join(f"    {n},\n" for n in every) + ")\n"
    lines = source.splitlines(keepends=True)
    lines[node.lineno - 1:node.end_lineno] = [line]
    return "".join(lines)


def add_row(source: str, p: Plan) -> str:
    """The map with ``p``'s row after the last row of its assignment."""
    calls = top_level(ast.parse(source), "EXERCISES").value.elts
    last = [c for c in calls if c.args[0].value == p.number][-1]
    lines = source.splitlines(keepends=True)
    _insert(lines, last.end_lineno, stubs.row(p))
    return "".join(lines)


def homes_entry(module: str, names: list[str]) -> str:
    """One entry of ``HOMES``: on one line when it fits, else the names wrapped at the line length."""
    quoted = [f'"{n}"' for n in names]
    line = f'    "{module}": ({", ".join(quoted)}),\n'
    if len(line) <= WIDTH + 1:
        return line
    out, current = [f'    "{module}": (\n'], "       "
    for q in quoted:
        if len(current) + len(q) + 2 > WIDTH:
            out.append(current + "\n")
            current = "       "
        current += f" {q},"
    return "".join(out) + current + "\n    ),\n"


def add_home(source: str, p: Plan) -> str:
    """``checks/__init__.py`` with the check in its module's ``HOMES`` entry (which ``__all__`` and
    ``MISTAKES`` are made from)."""
    homes = top_level(ast.parse(source), "HOMES").value
    module = f"a{p.number}"
    i = [k.value for k in homes.keys].index(module)
    names = sorted({*ast.literal_eval(homes.values[i]), p.check})
    lines = source.splitlines(keepends=True)
    lines[homes.keys[i].lineno - 1:homes.values[i].end_lineno] = [homes_entry(module, names)]
    return "".join(lines)


def add_check(source: str, p: Plan) -> str:
    """The assignment's checks with the stub before ``MISTAKES``, named in ``MISTAKES`` and ``__all__``."""
    source = add_import(source, "core", ["Mistake"], level=1)
    tree = ast.parse(source)
    mistakes, exported = top_level(tree, "MISTAKES"), top_level(tree, "__all__")
    lines = source.splitlines(keepends=True)
    _insert(lines, mistakes.end_lineno - 1, f'    "{p.check}": {p.mistakes},\n')
    _insert(lines, mistakes.lineno - 1, stubs.check(p))
    last = exported.value.elts[-1]
    end = lines[last.end_lineno - 1]
    lines[last.end_lineno - 1] = end[:last.end_col_offset] + f', "{p.check}"' + end[last.end_col_offset:]
    if len(lines[last.end_lineno - 1]) > WIDTH + 1:
        indent = " " * exported.value.col_offset
        lines[last.end_lineno - 1] = (end[:last.end_col_offset] + ",\n" + indent + f' "{p.check}"'
                                      + end[last.end_col_offset:])
    return "".join(lines)


def add_hidden(source: str, p: Plan) -> str:
    """The assignment's hidden tests with the stub at the end (and in ``FIXED`` when worked by hand)."""
    source = add_import(source, "grader.hidden", ["Case", "reads"] if p.by_hand else ["Case", "calls", "generator"])
    if p.by_hand:
        source = _add_fixed(source, p.graded)
    return source.rstrip("\n") + "\n" + stubs.hidden(p)


def _add_fixed(source: str, graded: str) -> str:
    """``FIXED``, the grade cells whose question is fixed by the text, with ``graded`` in it (made if missing)."""
    try:
        node = top_level(ast.parse(source), "FIXED")
    except LookupError:
        node = top_level(ast.parse(source), "ASSIGNMENT")
        lines = source.splitlines(keepends=True)
        _insert(lines, node.end_lineno, f'FIXED = {{"{graded}"}}  # worked by hand: the same question in every run\n')
        return "".join(lines)
    lines = source.splitlines(keepends=True)
    line = lines[node.lineno - 1]
    close = line.index("}", node.value.col_offset)
    line = line[:close] + f', "{graded}"' + line[close:]
    if len(line) > WIDTH + 1 and "  # " in line:  # the comment goes above the set
        code, comment = line.rstrip("\n").split("  # ", 1)
        line = f"# {comment}\n{code}\n"
    lines[node.lineno - 1] = line
    return "".join(lines)


def add_bank(source: str, p: Plan) -> str:
    """The assignment's bank with a first wrong answer for the new answer cell, at the end of ``WRONG``."""
    wrong = top_level(ast.parse(source), "WRONG")
    lines = source.splitlines(keepends=True)
    _insert(lines, wrong.end_lineno - 1, stubs.bank(p))
    return "".join(lines)


def edit(path: Path, change, p: Plan) -> Path:
    """Apply ``change(source, p)`` to the file at ``path``; the new source must still parse."""
    new = change(path.read_text(), p)
    ast.parse(new)
    path.write_text(new)
    return path
