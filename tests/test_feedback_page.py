"""The feedback page is nbconvert's HTML export of nbgrader's feedback template, made without nbconvert's closing
BeautifulSoup pass (which parsed and wrote out the whole page again, about half of its time): the page reads the
same as nbconvert's own export, and every image still has an alternative text."""

from __future__ import annotations

import base64
import io

import nbformat
import pytest
from bs4 import BeautifulSoup

from grader import feedback, gradebook

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
    gradebook.record(db_url, A, "ana", {g: 0.0 for g in points})
    nb = nbformat.read(notebook_path("solutions", A), as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("display_data", data={"image/png": _png(), "text/plain": "<Figure>"}),
                    nbformat.v4.new_output("stream", name="stdout", text="tiles <b>6</b>\n")]
    ours = feedback.page(nb, {}, ["a note"], A, "ana", db_url)

    from nbconvert.exporters import HTMLExporter
    from nbgrader.preprocessors import GetGrades

    stock = HTMLExporter(config=feedback._exporter().config)  # nbconvert's own, with the same template
    stock.register_preprocessor(GetGrades(), enabled=True)
    ours_exporter, feedback._exporter = feedback._exporter, lambda: stock
    try:
        theirs = feedback.page(nb, {}, ["a note"], A, "ana", db_url)
    finally:
        feedback._exporter = ours_exporter
    return ours, theirs


def _text(html: str) -> str:
    return " ".join(BeautifulSoup(html, "html.parser").get_text().split())


def test_the_page_reads_as_nbconverts_own_export(rendered):
    ours, theirs = rendered
    assert "tiles <b>6</b>" not in ours and "tiles &lt;b&gt;6&lt;/b&gt;" in ours  # the student's text, escaped
    assert _text(ours) == _text(theirs)


def test_every_image_has_alternative_text(rendered):
    ours, _ = rendered
    images = BeautifulSoup(ours, "html.parser").find_all("img")
    assert images, "the picture is on the page"
    assert all(img.get("alt") for img in images), [str(img)[:120] for img in images if not img.get("alt")]
