"""The feedback page is nbconvert's HTML export of nbgrader's feedback template, made without nbconvert's closing
BeautifulSoup pass (which parsed and wrote out the whole page again, about half of its time), without validating
the notebook after every preprocessor, and from the grades it is given rather than a gradebook query per cell: the
page reads the same as nbconvert's own export with nbgrader's GetGrades reading the gradebook (points and a comment
entered by hand included), and every image still has an alternative text."""

from __future__ import annotations

import base64
import io
from types import SimpleNamespace

import nbformat
import pytest
from bs4 import BeautifulSoup

from grader.recording import feedback, gradebook

from conftest import notebook_path

pytestmark = pytest.mark.slow
A = "04_queries_keys_values"


def _png() -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """(our page, nbconvert's own HTMLExporter page) of the solution with a picture and a printed line."""
    work = tmp_path_factory.mktemp("course")
    _, db_url, points = gradebook.prepare(work, A, 60)
    first, *_ = points
    gradebook.record(db_url, A, "ana", {g: 0.0 for g in points})
    gradebook.set_manual(db_url, A, "ana", first, 1.5)  # an instructor's points and comment
    gb = gradebook.opened(db_url)
    answer = next(c.name for c in gb.find_submission_notebook(A, A, "ana").comments)
    gb.find_comment(answer, A, A, "ana").manual_comment = "See me about the scaling."
    gb.db.commit()
    held = gradebook.record(db_url, A, "ana", {g: 0.0 for g in points})  # as a regrade reads it back
    assert held.points[first] == 1.5 and held.comments[answer] == "See me about the scaling."
    nb = nbformat.read(notebook_path("solutions", A), as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("display_data", data={"image/png": _png(), "text/plain": "<Figure>"}),
                    nbformat.v4.new_output("stream", name="stdout", text="tiles <b>6</b>\n")]
    ours = feedback.page(nb, {}, ["a note"], A, "ana", held)

    from nbconvert.exporters import HTMLExporter
    from nbgrader.preprocessors import GetGrades

    class FromTheGradebook(GetGrades):  # nbgrader's own, reading every cell's grade and comment from the gradebook
        def preprocess(self, nb, resources):
            resources["nbgrader"]["db_url"] = db_url
            return super().preprocess(nb, resources)

    stock = HTMLExporter(config=feedback._exporter().config)  # nbconvert's own, with the same template
    stock.register_preprocessor(FromTheGradebook(), enabled=True)
    ours_exporter, feedback._exporter = feedback._exporter, lambda: stock
    try:
        theirs = feedback.page(nb, {}, ["a note"], A, "ana", None)
    finally:
        feedback._exporter = ours_exporter
    return ours, theirs


def _text(html: str) -> str:
    return " ".join(BeautifulSoup(html, "html.parser").get_text().split())


def test_the_page_reads_as_nbconverts_own_export(rendered):
    ours, theirs = rendered
    assert "See me about the scaling." in _text(ours) and "1.5" in _text(ours)
    assert "tiles <b>6</b>" not in ours and "tiles &lt;b&gt;6&lt;/b&gt;" in ours  # the student's text, escaped
    assert _text(ours) == _text(theirs)


def test_every_image_has_alternative_text(rendered):
    ours, _ = rendered
    images = BeautifulSoup(ours, "html.parser").find_all("img")
    assert images, "the picture is on the page"
    assert all(img.get("alt") for img in images), [str(img)[:120] for img in images if not img.get("alt")]


def test_a_verdict_says_that_an_exercises_points_are_all_or_nothing():
    """4 of 5 hidden tests passed earns none of the 3 points: the page says why, beside the count."""
    from grader.judging.verdicts import Verdict

    box = feedback.verdict_html(Verdict(0.0, 3.0, 4, 5, ["the float64 case: wrong values"]))
    text = _text(box)
    assert "Hidden tests: 4 of 5 passed (0 of 3 points)." in text
    assert "An exercise's points are all or nothing: it earns them only when every one of its hidden tests passes." \
        in text


def test_points_given_by_hand_are_marked_beside_the_hidden_tests():
    """The page showed 1.5/3 in its total beside "0 of 3 points" under the cell, with no sign of the hand."""
    from grader.judging.verdicts import Verdict

    verdict = Verdict(0.0, 3.0, 4, 5, ["the float64 case: wrong values"])
    text = _text(feedback.verdict_html(verdict, by_hand=1.5))
    assert "(0 of 3 points)." in text
    assert "Points given by hand: 1.5 of 3; they count instead of the hidden tests' 0." in text
    assert "given by hand" not in _text(feedback.verdict_html(verdict))
    held = SimpleNamespace(points={"ex2": 1.5, "ex3": 2.0}, manual=["ex2"])
    assert (feedback._by_hand(held, "ex2"), feedback._by_hand(held, "ex3")) == (1.5, None)


@pytest.mark.parametrize("with_static", [True, False])
def test_a_page_without_its_mathjax_says_its_formulas_are_tex(tmp_path, with_static):
    """On a learning platform a page is kept alone, without ``_static/``: its formulas stay TeX, and the page says
    so; beside its MathJax they are typeset and the note is gone (Chromium, offline)."""
    from browser import browse

    if with_static and not feedback.copy_mathjax(tmp_path):
        pytest.skip("the book's MathJax is not installed (npm ci)")
    page = tmp_path / "ana.html"
    page.write_text(f"<!DOCTYPE html><html><head>{feedback.LOCAL_MATHJAX}</head><body>{feedback.TEX_NOTE}"
                    "<p>$\\sqrt{d_k}$</p></body></html>", encoding="utf-8")
    dom = browse(page.as_uri(), tmp_path / "profile", "--dump-dom")
    assert ("<mjx-container" in dom) is with_static, dom[-2000:]
    assert ("id=\"tex-note\"" in dom) is not with_static, dom[-2000:]
