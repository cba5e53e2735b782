"""Step 3: verdicts, decided here from the kernel's replies and the grader's own references.

A grade cell earns its points when every one of its hidden cases passes. A reply that is missing,
malformed, or an error scores 0 for that case, with the reason. Nothing the kernel printed or
displayed counts.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

from grader import hidden


@dataclass
class Verdict:
    points: float
    max_points: float
    passed: int
    total: int
    failures: list[str] = field(default_factory=list)   # "what was tested: what is wrong"


def judge_cell(cases: list[hidden.Case], replies: list, max_points: float) -> Verdict:
    failures = []
    for case, (kind, reply) in zip(cases, replies + [("missing", "no reply")] * (len(cases) - len(replies))):
        if kind == "ok":
            try:
                problem = case.judge(reply)
            except Exception as exc:  # noqa: BLE001 - a reply the judge cannot read is a wrong reply
                problem = f"the result could not be compared ({type(exc).__name__}: {str(exc)[:120]})"
        elif kind == "error":  # a message, or a type made up on the spot, could carry the hidden inputs back
            name = str(reply).split(":")[0]
            shown = name if isinstance(getattr(builtins, name, None), type) else "an exception of its own type"
            problem = f"raised {shown} (run the visible check to see the message)"
        else:
            problem = f"no usable answer ({reply})"
        if problem:
            failures.append(f"{case.what}: {problem}")
    passed = len(cases) - len(failures)
    return Verdict(max_points if not failures and cases else 0.0, max_points, passed, len(cases), failures)


def judge(assignment: str, replies: dict[str, list], max_points: dict[str, float]) -> dict[str, Verdict]:
    """grade_id -> verdict, for every grade cell of the assignment."""
    all_cases = hidden.cases(assignment)
    return {gid: judge_cell(all_cases.get(gid, []), replies.get(gid, []), pts) for gid, pts in max_points.items()}
