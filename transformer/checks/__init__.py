"""Immediate, layered feedback for the exercise notebooks.

:mod:`transformer.checks.core` holds the machinery (``compare`` and the layered
report); one module per chapter holds that chapter's checks. Every check is
re-exported here, so an exercise notebook can write
``from transformer.checks import check_attention``.
"""

from .core import PASSED, CheckFailed, compare
from .ch04 import *  # noqa: F401,F403
from .ch04 import __all__ as _ch04

__all__ = ["PASSED", "CheckFailed", "compare", *_ch04]
