"""The known mistakes of every exercise, one module per assignment (``a04`` for assignment 04).

Each module lists, for each exercise, the common wrong answers as
:class:`~checks.core.Mistake` data: the wrong function or class itself
(often the right one with one step changed) and the hint that names it. The checks
run them on their own inputs; ``tests/test_check_mistakes.py`` gives each one to its
check and asserts that the feedback names it. Mistakes in answers worked by hand are
wrong values, and live next to their exercise in :mod:`checks`.
"""
