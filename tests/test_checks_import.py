"""An exercise notebook's ``from checks import ...`` loads its own assignment's checks and no
pictures: every graded kernel runs that line, so what it imports is paid once per submission. Every name
``HOMES`` lists is in the module it names, and every check a module defines is listed. The checks are a package of
their own: they import ``transformer``, and ``transformer`` neither imports them nor offers them as ``T.checks``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import checks

PROBE = """
import json, sys
from checks import check_attention, check_self_attention
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("checks.a", "transformer.viz",
                                                                  "matplotlib", "ipywidgets")))))
"""

PACKAGE_ALONE = """
import json, sys
import transformer
print(json.dumps([sorted(m for m in sys.modules if m.split(".")[0] == "checks"), hasattr(transformer, "checks")]))
"""


def test_one_assignments_checks_load_one_module_and_no_pictures(root):
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=root)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["checks.a04"]


def test_the_package_alone_loads_no_checks_and_has_none(root):
    out = subprocess.run([sys.executable, "-c", PACKAGE_ALONE], capture_output=True, text=True, check=True, cwd=root)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[], False]


@pytest.mark.parametrize("module", sorted(checks.HOMES))
def test_every_listed_name_lives_in_its_module_and_every_check_is_listed(module):
    found = getattr(checks, module)
    for name in checks.HOMES[module]:
        assert getattr(checks, name) is getattr(found, name)
    defined = {name for name, value in vars(found).items()
               if name.startswith("check_") and getattr(value, "__module__", None) == found.__name__}
    assert defined <= set(checks.HOMES[module]), f"{module} defines checks HOMES does not list"


def test_an_unknown_name_is_an_attribute_error_that_names_it():
    with pytest.raises(AttributeError, match="check_nothing"):
        checks.check_nothing  # noqa: B018


def test_mistakes_gathers_every_assignment():
    assert {"check_attention", "check_byte_tokens", "check_restored_fractions"} <= set(checks.MISTAKES)
