"""The feedback page's exporter: nbconvert's HTML exporter and nbgrader's GetGrades, each with one change.

Imported only when the first page is made (nbconvert takes a second to import).
"""

from __future__ import annotations

import re

from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbgrader.preprocessors import GetGrades
from nbgrader.preprocessors.base import NbGraderPreprocessor

from grader.gradebook import opened

NO_ALT = re.compile(r"<img(?![^>]*\balt=)", re.I)  # an image without alternative text (the scan stops at its ">")
DEFAULT_ALT = "No description has been provided for this image"  # nbconvert's words


class RunGrades(GetGrades):
    """nbgrader's GetGrades (each cell's score and comment, the notebook's score) read from the run's open
    gradebook (``grader.gradebook.opened``) instead of one opened and closed for every page."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        self.notebook_id, self.assignment_id, self.student_id = info["notebook"], info["assignment"], info["student"]
        self.gradebook = opened(info["db_url"])
        nb, resources = NbGraderPreprocessor.preprocess(self, nb, resources)  # the cells, by GetGrades' own rule
        notebook = self.gradebook.find_submission_notebook(self.notebook_id, self.assignment_id, self.student_id)
        penalty = notebook.late_submission_penalty or 0
        info.update(score=notebook.score - penalty, max_score=notebook.max_score, late_penalty=penalty)
        self.gradebook.db.rollback()  # a page only reads: nothing of it stays in the session
        return nb, resources


class FeedbackExporter(HTMLExporter):
    """HTMLExporter without its last pass, which parses and writes out the whole page again with BeautifulSoup (half
    of a page's time) to give images an alternative text and make the lab template's cells focusable: the feedback
    template is the classic one (nothing to make focusable), and the images get nbconvert's alternative text here,
    on the text."""

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
