"""The bookkeeping of a grading run, on the trusted side: each graded submission's result saved
(``grader/recording/results.py``), its points written into nbgrader's gradebook (``grader/recording/gradebook.py``) and
its feedback page made (``grader/recording/feedback.py``), or for a submission that never ran, its problem page; and
what the report reads of each (``grader/reporting/report.py``): what the sandbox stopped, the grader's static findings,
the points entered by hand, the notebook as it ran.
"""

from __future__ import annotations

from pathlib import Path

from grader.recording import feedback, gradebook, results
from grader.safe_text import clean


class Book:
    """The trusted side's record of each graded submission: gradebook, feedback page, saved result."""

    def __init__(self, out: Path, assignment: str, db_url: str, unsafe: bool, seed: int, flagged: dict):
        self.out, self.assignment, self.db_url, self.unsafe, self.seed = out, assignment, db_url, unsafe, seed
        self.flagged = flagged            # student -> flags (read statically, then what the kernel recorded)
        self.sandboxes: dict = {}         # student -> what the sandbox stopped
        self.manual: dict = {}            # student -> grade_ids whose points were entered by hand
        self.notebooks: dict = {}         # student -> the notebook as it ran (for the similarity report)

    def fresh(self, sub, result: dict) -> None:
        """Steps 3-5 for a submission just graded: its result saved first, then gradebook and page."""
        record = {"student": sub.student, "file": clean(sub.file_name), "digest": sub.digest,
                  "seed": self.seed, "problems": result["problems"], "sandbox": result["sandbox"],
                  "flags": [*self.flagged.get(sub.student, []), *result.get("flags", [])],
                  "verdicts": result["verdicts"]}
        results.save(self.out / "results", sub.student, record, result["notebook"])
        self.keep(sub, {**record, "notebook": result["notebook"]})

    def keep(self, sub, record: dict) -> None:
        """A submission's result (fresh or saved) into the gradebook, its page and its row."""
        import nbformat

        for p in record["problems"]:
            sub.note(p)
        judged = record["verdicts"]
        held = gradebook.record(self.db_url, self.assignment, sub.student, {g: v.points for g, v in judged.items()})
        sub.points, sub.score, sub.graded = held.points, held.score, True
        self.manual[sub.student] = held.manual
        self.sandboxes[sub.student] = record["sandbox"]
        self.flagged[sub.student] = record.get("flags", [])
        nb = nbformat.reads(record["notebook"], as_version=4)
        self.notebooks[sub.student] = nb
        write_page(self.out, self.assignment, sub.student, nb, judged, sub.problems, self.flagged[sub.student],
                   held, sandboxed=not self.unsafe)


    def finish(self, subs: list, saved: list, forget_others: bool) -> None:
        """Once every submission has run: the results ``saved`` from an earlier run (submission, record) into the
        gradebook with their pages made again; with ``forget_others``, the gradebook forgets every student without
        a graded submission now; and a submission none of whose exercises was graded (unreadable, or its kernel
        never answered) scores 0, with a page that says why."""
        for sub, record in saved:
            self.keep(sub, record)
        if forget_others:
            kept = {s.student for s in subs if s.status == "graded" and s.graded}
            gradebook.forget(self.db_url, self.assignment, kept)
        for sub in subs:
            if sub.status != "superseded" and not sub.graded:
                sub.note("no exercise could be graded: score 0")
                (self.out / "feedback" / f"{sub.student}.html").write_text(
                    feedback.problem_page(sub.student, self.assignment, sub.problems), encoding="utf-8")


def write_page(out: Path, assignment: str, student: str, nb, verdicts: dict, problems: list[str], flags: list[str],
               held: gradebook.Recorded, sandboxed: bool) -> None:
    """``feedback/<student>.html``: the notebook as it ran, its verdicts, and the notes (problems, then the flags the
    grader read), with the points the gradebook ``held`` (those given by hand included)."""
    notes = [*problems, *(f"read by the grader: {f}" for f in flags)]
    page = feedback.page(nb, verdicts, notes, assignment, student, held, sandboxed=sandboxed)
    (out / "feedback" / f"{student}.html").write_text(page, encoding="utf-8")
