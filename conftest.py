"""The repository's pytest set-up for strict nbval: kernels that start reliably (see tools/nbval_kernels.py)."""

from tools.nbval_kernels import pytest_configure, pytest_unconfigure  # noqa: F401 - pytest's hooks
