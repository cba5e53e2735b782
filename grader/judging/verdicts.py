"""Step 3: verdicts, decided here from the kernel's replies and the grader's own references.

A grade cell earns its points when every one of its scored hidden cases passes. A reply that is
missing, malformed (not of its probe's form), or an error scores 0 for that case, with the reason.
A case that is not scored (a property only the kernel can report, see :class:`grader.hidden.Case`)
is shown as "reported by your kernel" and changes no points. Nothing the kernel printed or
displayed counts.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

from grader import hidden
from grader.hidden.judge import Malformed


@dataclass
class Verdict:
    points: float
    max_points: float
    passed: int
    total: int
    failures: list[str] = field(default_factory=list)   # "what was tested: what is wrong" (scored cases)
    reported: list[str] = field(default_factory=list)   # the same, for cases the kernel reports (no points)


def exception_name(error) -> str:
    """The type of the exception in ``"Type: message"`` if it is one of Python's own, else fixed words."""
    name, kind = str(error).split(":")[0], getattr(builtins, str(error).split(":")[0], None)
    return name if isinstance(kind, type) and issubclass(kind, BaseException) else "an exception of its own type"


def problem_of(case: hidden.Case, kind: str, reply) -> str | None:
    """What is wrong with one reply (``kind`` as :func:`grader.running.run.read_reply` gives it), or None."""
    if kind == "ok":
        try:
            return case.judge(reply)
        except Malformed as exc:
            return f"the reply is not of the form the probe writes ({exc})"
        except Exception as exc:  # noqa: BLE001 - a reply the judge cannot read is a wrong reply
            return f"the result could not be compared ({type(exc).__name__})"
    if kind == "error":  # a message, or a type made up on the spot, could carry the hidden inputs back
        return f"raised {exception_name(reply)} (run the visible check to see the message)"
    return f"no usable answer ({reply})"


def judge_cell(cases: list[hidden.Case], problems: list[str | None], max_points: float) -> Verdict:
    """The verdict of one grade cell from each case's problem (None: passed), in the cases' order."""
    if len(problems) != len(cases):
        raise ValueError(f"problems: expected one per case ({len(cases)}), got {len(problems)}")
    failures, reported = [], []
    for case, problem in zip(cases, problems, strict=True):
        if problem:
            (failures if case.scored else reported).append(f"{case.what}: {problem}")
    scored = [c for c in cases if c.scored]
    passed = len(scored) - len(failures)
    return Verdict(max_points if scored and not failures else 0.0, max_points, passed, len(scored), failures,
                   reported)
