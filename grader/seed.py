"""A grading run's seed, from which the hidden tests draw their inputs: what is secret of the grading
(``book/instructors.md``, "What is public and what is secret").

The seed is given (``--seed``, a regrade), derived from the course's secret and the assignment (``--secret-file`` or
the environment variable ``GRADER_SECRET``, never inside the repository, which is public), or fresh. The run
records it in ``grading/<id>/run.json``.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

SECRET_ENV = "GRADER_SECRET"  # the course's secret, from which each assignment's seed is derived


def run_seed(assignment: str, seed: int | None = None, secret_file: Path | None = None) -> tuple[int, str]:
    """The run's seed and where it came from: given (a regrade), the course's secret (a file or the
    environment variable ``GRADER_SECRET``, never inside the repository), or fresh."""
    if seed is not None:
        return int(seed), "given"
    secret, source = None, "fresh"
    if secret_file is not None:
        secret, source = secret_file.read_text(encoding="utf-8").strip(), f"the secret in {secret_file}"
    elif os.environ.get(SECRET_ENV):
        secret, source = os.environ[SECRET_ENV], f"the secret in ${SECRET_ENV}"
    if secret:
        return int.from_bytes(hashlib.sha256(f"{secret}:{assignment}".encode()).digest()[:8], "little") >> 1, source
    return secrets.randbits(63), source
