"""Code that runs inside the student's sandboxed kernel, and nothing else.

Everything in this folder is shipped whole into the sandbox (bound read-only) and imported there by the
kernel; it imports only the standard library, numpy and torch (``tests/test_kernel_side.py`` checks
it). Nothing it does or reports is trusted: its reports inform, they never decide. The grader reads
what it writes as hostile plain data (``grader.kernel_side.plain.decode`` under budgets) and judges
only values it compares with its own references.
"""
