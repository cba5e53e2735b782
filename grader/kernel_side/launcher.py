"""The graded kernel's start: IPython's kernel (``python -m ipykernel_launcher``) without its debugger.

Nobody attaches a debugger to a graded kernel, and importing ``debugpy`` is a third of what the kernel imports
before it answers (about 0.2 s of CPU for every submission, and again for every kernel the grader restarts);
with the import refused, ipykernel starts without a debugger, its own fallback when debugpy is missing
(``ipykernel.debugger``). Everything else is ipykernel's launcher as it is.
"""

import sys

if __name__ == "__main__":
    sys.modules["debugpy"] = None  # `import debugpy` raises ImportError
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
