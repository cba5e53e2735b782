"""An exercise's text states no rule the grader does not hold: what it forbids is on its **Do not use:** line (its
``FORBIDS``, tests/test_forbidden.py), and every other sentence that reads as a rule is one the grading scores or
reports on the page (``HELD`` says how).
Advice is written as advice ("torch operations are all you need"), not as a rule nobody checks."""

from __future__ import annotations

import re

import nbformat
import pytest

from layout.paths import assignments, notebook_path

RULE = re.compile(r"(?i)\b(do not|don't|never use|use only|must not|without using|not allowed|forbidden)\b")
# Sentences that read as rules and are held, each with how:
HELD = {
    "do not change them": "the setup cells are locked: the grader rebuilds every submission from the release",
    "Do not change `words`": "a second call on the very same dict is scored, and so is the dict after the call "
                             "(grader/hidden/a01.py)",
    "Pairs that never occur must not appear": "the counts are compared as a whole (grader/hidden/a01.py)",
    "do not change it. They are PyTorch's": "the hidden test copies PyTorch's weights into the given sublayers",
    "Do not change\n": "the inputs after the call are compared with the grader's copies and scored "
                       "(grader/hidden/a09.py, tests/test_exercise_promises.py)",
    "Do not change `prefix`": "a second call on the very same prefix list is scored, and so is the list after the "
                              "call (grader/hidden/a09.py)",
    "Do not change `src` or `tgt` in place": "the inputs after the call are scored (grader/hidden/a10.py)",
    "Do not change `q`, `k`, `v` or `mask` in place": "the inputs after the call are scored (grader/hidden/a07.py)",
    "Do not change `parts`, `gamma` or `W_U` in place": "the inputs after the call are scored (grader/hidden/a13.py)",
    "Do not\n": "whether the generator was used is reported on the page (values cannot show it: tests/bank/a11.py)",
}
NOT_RULES = ("do not matter", "do not depend", "do not get", "not allowed to see")  # descriptions, not rules


def rule_sentences(assignment: str) -> list[str]:
    """The lines of the exercise text that read as rules, the **Do not use:** lines left out."""
    nb = nbformat.read(notebook_path("solutions", assignment), as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines(keepends=True):
            if RULE.search(line) and not line.startswith("**Do not use:**") and not any(d in line for d in NOT_RULES):
                found.append(line)
    return found


@pytest.mark.parametrize("assignment", assignments())
def test_every_rule_in_the_text_is_one_the_grading_holds(assignment):
    unheld = [line.strip() for line in rule_sentences(assignment) if not any(h in line for h in HELD)]
    assert not unheld, (f"{assignment}: a rule in the text that nothing checks; put it on the **Do not use:** line "
                        f"(FORBIDS), check it in the hidden tests, or write it as advice: {unheld}")


def test_the_list_of_held_rules_has_nothing_stale():
    lines = [line for a in assignments() for line in rule_sentences(a)]
    assert all(any(h in line for line in lines) for h in HELD), [h for h in HELD if not any(h in ln for ln in lines)]
