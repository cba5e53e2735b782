"""A new exercise in one command: every piece written as a stub that fails its test until its author fills it in.

    python -m tools.new_exercise ASSIGNMENT NAME --points P [--title T] [--difficulty 1-3] [--by-hand] [--about A]
    make exercise A=a13 NAME=new_thing POINTS=1 [TITLE="..."] [BY_HAND=1]

``ASSIGNMENT`` is ``a13``, ``13`` or ``13_looking_inside``; ``NAME`` is what the answer cell defines (a function, a
class, or with ``--by-hand`` a value worked by hand). The exercise comes last in its assignment. Written: the map's
row (``layout/exercises.py``); the solution notebook's four cells, the setup's import and the intro's table; the
chapter's list of exercises; the check, its mistake, ``__all__`` and ``MISTAKES`` (``checks/aNN.py``)
and ``HOMES`` (``checks/__init__.py``); the hidden test (``grader/hidden/aNN.py``, in ``FIXED`` when by
hand); the bank's first wrong answer (``tests/bank/aNN.py``); then the exercise notebook, regenerated.

Left to the author, each failing with a TODO that names it: the text, answer and hints (the solution notebook), the
check and its mistake, the hidden test. CONTRIBUTING.md ("Adding an exercise") says what to run then.
"""

from __future__ import annotations

import argparse
import ast
import keyword
import sys
from pathlib import Path

from layout import exercises
from layout.paths import CHECKS, NOTEBOOKS, ROOT, assignments, notebook_path
from tools import notebook_edit, source_edit
from tools.exercise_stubs import Plan


class Refused(ValueError):
    """A bad argument: the message names it, what was expected and what was given."""


def refuse(argument: str, expected: str, given) -> Refused:
    return Refused(f"{argument}: expected {expected}, got {given!r}")


def assignment_of(given: str) -> str:
    """``a13``, ``13`` or ``13_looking_inside`` -> ``13_looking_inside``."""
    known = assignments()
    number = given[1:] if given[:1] == "a" and given[1:].isdigit() else given
    found = [a for a in known if number in (a, a[:2])]
    if not found:
        shown = f"a{known[0][:2]} .. a{known[-1][:2]}" if known else "an assignment in solutions/"
        raise refuse("ASSIGNMENT", f"one of {shown} (or 13, 13_looking_inside)", given)
    return found[0]


def checks_in_use() -> set[str]:
    """Every name ``checks`` exports, read from ``HOMES`` without importing the package."""
    source = (CHECKS / "__init__.py").read_text()
    homes = source_edit.top_level(ast.parse(source), "HOMES").value
    return {name for names in homes.values for name in ast.literal_eval(names)}


def plan(args: argparse.Namespace) -> Plan:
    """The exercise the arguments ask for, or :class:`Refused`."""
    assignment = assignment_of(args.assignment)
    if not args.name.isidentifier() or keyword.iskeyword(args.name) or args.name.startswith("_"):
        raise refuse("NAME", "a Python name for what the answer cell defines, such as induction_score", args.name)
    try:
        points = int(args.points)
    except ValueError:
        points = 0
    if points < 1 or str(points) != args.points.strip():
        raise refuse("--points", "a whole number of points, 1 or more", args.points)
    if args.difficulty not in ("1", "2", "3"):
        raise refuse("--difficulty", "1, 2 or 3 (stars)", args.difficulty)
    title = args.title or f"`{args.name}`"
    if "|" in title or "\n" in title or not title.strip():
        raise refuse("--title", "one line without '|' (it goes into a table)", title)
    rows = exercises.of(assignment)
    p = Plan(assignment, len(rows) + 1, args.name, points, title, int(args.difficulty), args.by_hand, args.about)
    taken = [e.answer for e in rows if e.defines == args.name or e.graded == p.graded]
    if taken or p.check in checks_in_use():
        why = f"{taken[0]} defines it" if taken else f"{p.check} exists"
        raise refuse("NAME", f"a name no exercise of {assignment} defines and no check uses ({why})", args.name)
    return p


def write(p: Plan) -> list[Path]:
    """Every piece of the exercise, in the order the map names them; the files written."""
    n = p.number
    done = [source_edit.edit(ROOT / "layout" / "exercises.py", source_edit.add_row, p),
            notebook_edit.add_to_solution(notebook_path("solutions", p.assignment), p),
            notebook_edit.add_to_chapter(NOTEBOOKS / f"{p.assignment}.ipynb", p),
            source_edit.edit(CHECKS / f"a{n}.py", source_edit.add_check, p),
            source_edit.edit(CHECKS / "__init__.py", source_edit.add_home, p),
            source_edit.edit(ROOT / "grader" / "hidden" / f"a{n}.py", source_edit.add_hidden, p),
            source_edit.edit(ROOT / "tests" / "bank" / f"a{n}.py", source_edit.add_bank, p)]
    from tools.generate_exercises import generate  # nbgrader: imported only once the arguments are good

    generate([p.assignment])
    return [*done, notebook_path("exercises", p.assignment)]


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(prog="python -m tools.new_exercise", description=__doc__.splitlines()[0])
    out.add_argument("assignment", metavar="ASSIGNMENT", help="a13, 13 or 13_looking_inside")
    out.add_argument("name", metavar="NAME", help="what the answer cell defines")
    out.add_argument("--points", required=True, help="the grade cell's points, a whole number")
    out.add_argument("--title", default="", help="the heading's title, lower case: 'the induction score'")
    out.add_argument("--difficulty", default="1", help="stars, 1 to 3 (default 1)")
    out.add_argument("--by-hand", action="store_true", help="the answer is a value worked by hand")
    out.add_argument("--about", default="", help="what it asks, for the chapter's list of exercises")
    return out


def main(argv: list[str] | None = None) -> int:
    try:
        p = plan(parser().parse_args(argv))
    except Refused as err:
        print(f"new_exercise: {err}", file=sys.stderr)
        return 2
    for path in write(p):
        print(f"wrote {path.relative_to(ROOT)}")
    print(f"Now write the TODOs: the text, answer and hints of {p.graded} in solutions/{p.assignment}/; "
          f"{p.check} and its mistake in checks/a{p.number}.py; {p.graded} in "
          f"grader/hidden/a{p.number}.py. CONTRIBUTING.md says what to run then.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
