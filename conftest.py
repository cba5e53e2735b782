"""The repository's pytest set-up for strict nbval: kernels that start reliably (the plugin tests/nbval_kernels.py,
found through pyproject's ``pythonpath``)."""

pytest_plugins = ["nbval_kernels"]
