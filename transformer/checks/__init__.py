"""Immediate, layered feedback for the exercise notebooks.

:mod:`transformer.checks.core` holds the machinery (``compare`` and the layered
report); one module per chapter (``ch04`` for chapter 4) holds that chapter's
checks, listed in its ``__all__``. Every check is re-exported here, so an
exercise notebook can write ``from transformer.checks import check_attention``.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from .core import PASSED, CheckFailed, compare

__all__ = ["PASSED", "CheckFailed", "compare"]

for _info in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("ch"):
        _module = _importlib.import_module(f"{__name__}.{_info.name}")
        globals().update({name: getattr(_module, name) for name in _module.__all__})
        __all__ += list(_module.__all__)
