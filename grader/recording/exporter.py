"""The feedback page's exporter: nbconvert's HTML exporter and nbgrader's GetGrades, changed where they took a page's
time (a grading run makes one page per student while the workers grade).

Imported only when the first page is made (nbconvert takes a second to import).
"""

from __future__ import annotations

import re

import nbformat
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbgrader.preprocessors import GetGrades
from nbgrader.preprocessors.base import NbGraderPreprocessor

NO_ALT = re.compile(r"<img(?![^>]*\balt=)", re.I)  # an image without alternative text (the scan stops at its ">")
DEFAULT_ALT = "No description has been provided for this image"  # nbconvert's words


class GivenGrades(GetGrades):
    """nbgrader's GetGrades (each cell's score and comment, the notebook's score) from the grades the page is given,
    ``resources["nbgrader"]["grades"]`` (a :class:`grader.recording.gradebook.Recorded`, read from the run's gradebook
    when the points were written), instead of one gradebook query per cell."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        self.given = info["grades"]
        nb, resources = NbGraderPreprocessor.preprocess(self, nb, resources)  # the cells, by GetGrades' own rule
        info.update(score=self.given.score - self.given.late_penalty, max_score=self.given.max_score,
                    late_penalty=self.given.late_penalty)
        return nb, resources

    def _get_comment(self, cell, resources) -> None:
        cell.metadata.nbgrader["comment"] = self.given.comments[cell.metadata.nbgrader["grade_id"]]

    def _get_score(self, cell, resources) -> None:
        gid = cell.metadata.nbgrader["grade_id"]
        cell.metadata.nbgrader["score"], cell.metadata.nbgrader["points"] = (self.given.points[gid],
                                                                             self.given.max_points[gid])


class FeedbackExporter(HTMLExporter):
    """HTMLExporter without its last pass, which parses and writes out the whole page again with BeautifulSoup (half
    of a page's time) to give images an alternative text and make the lab template's cells focusable: the feedback
    template is the classic one (nothing to make focusable), and the images get nbconvert's alternative text here,
    on the text. The notebook is validated once, before the preprocessors, not again after each of them (a dozen
    times a page)."""

    def _preprocess(self, nb, resources):
        nbformat.validate(nb, relax_add_props=True)
        return super()._preprocess(nb, resources)

    def _validate_preprocessor(self, nbc, preprocessor) -> None:
        """Nothing: our preprocessors only fill in metadata and drop nothing the schema needs."""

    def from_notebook_node(self, nb, resources=None, **kw):
        info = nb.metadata.get("language_info", {})
        lexer = info.get("pygments_lexer", info.get("name"))
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", self.filters.get("highlight_code", Highlight2HTML(
            pygments_lexer=lexer, parent=self)))
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        body, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return NO_ALT.sub(f'<img alt="{DEFAULT_ALT}"', body), resources
