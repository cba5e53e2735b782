"""The suite's own schedule (conftest.py): the longest files start first, in the order LONGEST_FIRST names them."""

from __future__ import annotations

import re
import runpy

from conftest import ROOT

LONGEST_FIRST = runpy.run_path(str(ROOT / "conftest.py"))["LONGEST_FIRST"]  # the repository's conftest, not tests/'


def test_every_file_the_order_names_exists():
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, f"LONGEST_FIRST names files that are gone: {missing}"


def test_make_test_keeps_the_collected_order():
    """pytest-xdist starts the files with the most tests first unless told not to; the longest files have few."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test_recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M)[1]
    assert "--dist loadfile" in test_recipe and "--no-loadscope-reorder" in test_recipe, test_recipe
