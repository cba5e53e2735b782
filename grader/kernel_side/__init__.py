"""Code that runs inside the student's sandboxed kernel; one module of it, ``plain``, on both sides.

Everything in this folder is shipped whole into the sandbox (bound read-only) and imported there by the
kernel; it imports only the standard library, numpy and torch (``tests/test_kernel_side.py`` checks
it), and ``launcher`` starts the kernel itself: ipykernel's launcher without its debugger. Nothing it
does or reports is trusted: its reports inform, they never decide. The grader reads
what it writes as hostile plain data (``grader.kernel_side.plain.decode`` under budgets) and judges
only values it compares with its own references.

``plain`` is the format both sides write and read (a request goes in, a reply comes back), so it is one module:
the kernel imports it from here, and so does the trusted side (``grader.running.replies``, under the budgets of
``grader/limits.py``). It holds no state and no size of its own; everything else here runs only in the kernel.
"""
