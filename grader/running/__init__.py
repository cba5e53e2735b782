"""Step 2, running: each submission in its own sandboxed kernel, here or on a cluster's workers, and the kernel's
replies read as hostile plain data."""
