"""The gradebook is kept from run to run: points given by hand live there. When the assignment's graded cells change
under a gradebook that holds scores, nbgrader refuses to generate the assignment; the run stops with words that name
the cause, the folder and the two ways on, not with nbgrader's traceback."""

from __future__ import annotations

import pytest

from grader.recording import gradebook

pytestmark = pytest.mark.slow
A = "04_queries_keys_values"


def test_a_changed_assignment_names_the_kept_gradebook(tmp_path):
    work = tmp_path / "_nbgrader"
    work.mkdir()
    _, db_url, points = gradebook.prepare(work, A, 60)
    gradebook.record(db_url, A, "ana", {g: 0.0 for g in points})  # scores of a submission: nbgrader keeps the cells
    gradebook.opened(db_url).add_grade_cell("ex9_gone", A, A, max_score=1, cell_type="code")  # since removed
    with pytest.raises(RuntimeError) as caught:
        gradebook.prepare(work, A, 60)
    words = str(caught.value)
    assert words.startswith(f"{A}: its graded cells have changed") and str(work) in words, words
    assert "--out" in words and "not carried over" in words and "Traceback" not in words, words
