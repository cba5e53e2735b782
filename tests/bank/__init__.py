"""A bank of realistic wrong answers, one module per assignment (``a04.py`` for assignment 04).

Each module defines ``ASSIGNMENT`` (the assignment id) and ``WRONG``:

- ``WRONG[answer_cell] = [(mistake, source, hint_fragment or None), ...]``: every visible check
  must reject each wrong answer; where the mistake is a known one, the feedback must name it
  (contain ``hint_fragment``).
- ``CHECKS[answer_cell] = (check_function_name, variable_name)``: the check in
  :mod:`checks` that judges the cell, and the name the cell defines, read from the map of exercises
  (``layout/exercises.py``).
- ``EXPECTED[answer_cell] = [numbers]`` (optional): a hand-computed answer that no feedback may show.
- ``RIGHT[answer_cell] = [(what, source), ...]`` (optional): correct answers other than the solution's
  (numbers of another kind, another dtype, inputs changed in place where that is allowed); the visible
  check and the hidden tests must both accept each one.

Where the exercise's text says its inputs are not changed (``keeps`` in the map of exercises), an answer that changes
them is rejected by both, in the same words; in every other exercise, an answer may change its tensor inputs in place
and still earns its points (``promises.py`` makes such answers from the solution, tests/test_hidden_tests.py and
tests/test_exercise_promises.py run them).
"""

from __future__ import annotations

import importlib
import pkgutil

from layout import exercises

WRONG: dict[str, dict] = {}
CHECKS: dict[str, dict] = {}
EXPECTED: dict[str, dict] = {}
RIGHT: dict[str, dict] = {}

for _info in pkgutil.iter_modules(__path__):
    if _info.name.startswith("a"):
        _mod = importlib.import_module(f"{__name__}.{_info.name}")
        WRONG[_mod.ASSIGNMENT] = _mod.WRONG
        CHECKS[_mod.ASSIGNMENT] = exercises.checks(_mod.ASSIGNMENT)
        EXPECTED[_mod.ASSIGNMENT] = getattr(_mod, "EXPECTED", {})
        RIGHT[_mod.ASSIGNMENT] = getattr(_mod, "RIGHT", {})

# (assignment, answer cell, what, source) of every correct alternative, for parametrized tests
RIGHT_CASES = [(a, cell, what, src) for a, cells in RIGHT.items() for cell, rights in cells.items()
               for what, src in rights]
