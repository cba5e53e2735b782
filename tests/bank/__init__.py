"""A bank of realistic wrong answers, one module per assignment (``a04.py`` for assignment 04).

Each module defines ``ASSIGNMENT`` (the assignment id), ``WRONG`` and ``CHECKS``:

- ``WRONG[answer_cell] = [(mistake, source, hint_fragment or None), ...]``: every visible check
  must reject each wrong answer; where the mistake is a known one, the feedback must name it
  (contain ``hint_fragment``).
- ``CHECKS[answer_cell] = (check_function_name, variable_name)``: the check in
  :mod:`transformer.checks` that judges the cell, and the name the cell defines.
- ``EXPECTED[answer_cell] = [numbers]`` (optional): a hand-computed answer that no feedback may show.
"""

from __future__ import annotations

import importlib
import pkgutil

WRONG: dict[str, dict] = {}
CHECKS: dict[str, dict] = {}
EXPECTED: dict[str, dict] = {}

for _info in pkgutil.iter_modules(__path__):
    if _info.name.startswith("a"):
        _mod = importlib.import_module(f"{__name__}.{_info.name}")
        WRONG[_mod.ASSIGNMENT] = _mod.WRONG
        CHECKS[_mod.ASSIGNMENT] = _mod.CHECKS
        EXPECTED[_mod.ASSIGNMENT] = getattr(_mod, "EXPECTED", {})
