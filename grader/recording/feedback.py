"""Step 5: feedback pages a student can act on, which give nothing away and run no student script.

The page is nbgrader's feedback page (its template, and the scores the gradebook holds, given to it) for the
submission as it ran in the sandbox, with three changes: only text and PNG outputs are kept (so a
student's HTML or JavaScript never reaches the page, and the page escapes every text), each grade
cell is followed by what its hidden tests checked and, for each failure, what was wrong in words
(never the test's code, inputs or reference values), and formulas are typeset by a local MathJax.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import html
import re
import shutil
from pathlib import Path

import nbformat

from grader import limits
from grader.judging.verdicts import Verdict
from layout import nbmeta
from layout.paths import ROOT

MATHJAX = ROOT / "node_modules" / "mathjax" / "es5"
IGNORE = "mathjax_ignore tex2jax_ignore"  # MathJax 3's class, and MathJax 2's
# The template loads MathJax 2 from a CDN; the page loads the book's MathJax 3 from its own folder.
# Student text is typeset too (printed output, markdown answers): the safe extension filters what TeX can make
# (\\href to javascript:, styles, ids), and the extensions TeX may autoload are shipped beside the page. The
# grader's own boxes carry MathJax 3's ignore class.
# Where the page is opened without its _static/ folder (a learning platform keeps the page alone), the formulas stay
# TeX and the note at the top says so; MathJax, once it has loaded, takes the note away.
LOCAL_MATHJAX = """<script>
window.MathJax = {loader: {load: ["ui/safe"]},
                  tex: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]], processEscapes: true},
                  options: {ignoreHtmlClass: "mathjax_ignore", menuOptions: {settings: {inTabOrder: false}}},
                  startup: {pageReady: () => {
                    document.getElementById("tex-note")?.remove();
                    return MathJax.startup.defaultPageReady();
                  }}};
</script>
<script src="_static/mathjax/tex-mml-chtml.js" async></script>"""
TEX_NOTE = (f"<p id='tex-note' class='{IGNORE}' style='margin:8px'>The formulas on this page are shown as TeX "
            "source: MathJax, which typesets them, did not run here (it is read from the <code>_static</code> folder "
            "beside the page).</p>")


def _png(data) -> bool:
    try:
        return base64.b64decode(str(data), validate=True)[:8] == b"\x89PNG\r\n\x1a\n"
    except (binascii.Error, ValueError):
        return False


def sanitize(output) -> list:
    """Only plain text and real PNG images, as new outputs with nothing else in them."""
    kind = output.get("output_type")
    if kind == "stream":
        name = "stderr" if output.get("name") == "stderr" else "stdout"  # the kernel's word is not written as given
        text = str(output.get("text", ""))
        return [nbformat.v4.new_output("stream", name=name, text=text)]
    if kind == "error":
        ename, evalue = str(output.get("ename", "")), str(output.get("evalue", ""))
        traceback = [str(t) for t in output.get("traceback", [])][:limits.TRACEBACK_LINES]
        return [nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=traceback)]
    data = output.get("data", {})
    kept = {}
    if "text/plain" in data:
        kept["text/plain"] = str(data["text/plain"])
    if "image/png" in data and _png(data["image/png"]):
        kept["image/png"] = str(data["image/png"]).replace("\n", "")
    return [nbformat.v4.new_output("display_data", data=kept)] if kept else []


ALL_OR_NOTHING = ("An exercise's points are all or nothing: it earns them only when every one of its hidden tests "
                  "passes.")


def verdict_html(v: Verdict, by_hand: float | None = None) -> str:
    """The box under a graded cell: its hidden tests' verdict, and ``by_hand``, the points an instructor gave it by
    hand (they replace the hidden tests' points, so the page says which count)."""
    state = "passed" if not v.failures else "failed"
    colour = "#1a7f37" if not v.failures else "#b42318"
    head = (f"<p style='margin:0;color:{colour}'><b>Hidden tests: {v.passed} of {v.total} passed "
            f"({v.points:g} of {v.max_points:g} points).</b></p>"
            f"<p style='margin:0'>{ALL_OR_NOTHING}</p>")
    if by_hand is not None:
        head += (f"<p style='margin:0'><b>Points given by hand: {by_hand:g} of {v.max_points:g}</b>; they count "
                 f"instead of the hidden tests' {v.points:g}.</p>")
    shown = limits.FAILURES_SHOWN
    items = "".join(f"<li>{html.escape(f)}</li>" for f in v.failures[:shown])
    more = f"<li>and {len(v.failures) - shown} more</li>" if len(v.failures) > shown else ""
    body = f"<ul style='margin:4px 0'>{items}{more}</ul>" if items else ""
    if v.reported:
        said = "".join(f"<li>{html.escape(r)}</li>" for r in v.reported[:limits.FAILURES_SHOWN])
        body += (f"<p style='margin:0'>Reported by your kernel (no points either way):</p>"
                 f"<ul style='margin:4px 0'>{said}</ul>")
    return (f"<div class='grader-verdict {state} {IGNORE}' role='status' style='border-left:4px solid {colour};"
            f"padding:4px 8px;margin:4px 0'>{head}{body}</div>")


def _by_hand(grades, gid: str) -> float | None:
    """The points of ``gid`` an instructor gave by hand, as the gradebook holds them
    (``grader.recording.gradebook.Recorded``)."""
    manual = getattr(grades, "manual", None) or ()
    return float(grades.points[gid]) if gid in manual and gid in getattr(grades, "points", {}) else None


def notes_html(problems: list[str], sandboxed: bool) -> str:
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    warn = "" if sandboxed else "<p><b>This submission was graded without a sandbox.</b></p>"
    if not items and not warn:
        return ""
    return (f"<div class='{IGNORE}' style='border:2px solid #b42318;padding:8px;margin:8px'>"
            f"<b>Notes from the grader</b>"
            f"{warn}<ul>{items}</ul></div>")


def page(nb, verdicts: dict[str, Verdict], problems: list[str], assignment: str, student: str, grades,
         sandboxed: bool = True) -> str:
    """The feedback page's HTML, at most ``limits.MAX_PAGE_BYTES`` (without the cells' outputs if need be).
    ``grades``: the submission as the gradebook holds it (:class:`grader.recording.gradebook.Recorded`), manual points
    and comments included."""
    body = _page(nb, verdicts, problems, assignment, student, grades, sandboxed, outputs=True)
    if len(body.encode("utf-8")) > limits.MAX_PAGE_BYTES:
        note = (f"the cells' outputs were left out: with them this page would be larger than "
                f"{limits.MAX_PAGE_BYTES // 2**20} MiB")
        body = _page(nb, verdicts, [*problems, note], assignment, student, grades, sandboxed, outputs=False)
    return body


def _page(nb, verdicts: dict[str, Verdict], problems: list[str], assignment: str, student: str, grades,
          sandboxed: bool, outputs: bool) -> str:
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for out in cell.get("outputs", []) for o in sanitize(out)] if outputs else []
            cell.execution_count = None
            gid = nbmeta.grade_id(cell)
            if nbmeta.is_graded(cell) and gid in verdicts:
                cell.outputs.append(nbformat.v4.new_output("display_data",
                                                           data={"text/html": verdict_html(
                                                               verdicts[gid], _by_hand(grades, gid))}))
    exporter = _exporter()
    resources = {"nbgrader": {"notebook": assignment, "assignment": assignment, "student": student,
                              "grades": grades}}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    body = re.sub(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", lambda m: LOCAL_MATHJAX, body,
                  count=1, flags=re.S)
    box = TEX_NOTE + notes_html(problems, sandboxed)
    return re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + box, body, count=1) if box else body


@functools.cache
def _exporter():
    """nbgrader's feedback template, compiled once per process (a new exporter compiles it again: about 0.5 s)."""
    from traitlets.config import Config

    from grader.recording.exporter import FeedbackExporter, GivenGrades

    nbgrader_templates = Path(__import__("nbgrader").__file__).parent / "server_extensions" / "formgrader"
    c = Config()
    c.HTMLExporter.template_name = "feedback"
    c.HTMLExporter.extra_template_basedirs = [str(nbgrader_templates / "templates")]
    bootstrap = nbgrader_templates / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    c.HTMLExporter.extra_template_paths = [str(bootstrap)]
    exporter = FeedbackExporter(config=c)
    exporter.register_preprocessor(GivenGrades(), enabled=True)
    return exporter


def problem_page(student: str, assignment: str, problems: list[str]) -> str:
    """The page of a submission that could not be graded at all: the reasons."""
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    title = f"{html.escape(assignment)}: {html.escape(student)}"
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<h1>{title}</h1><p>Notes from the grader:</p><ul>{items}</ul></body></html>")


def copy_mathjax(folder: Path) -> bool:
    """The feedback folder's own MathJax (from the book's assets); False when they are not installed."""
    target = folder / "_static" / "mathjax"
    if not MATHJAX.is_dir():
        return False
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(MATHJAX / "tex-mml-chtml.js", target / "tex-mml-chtml.js")
    (target / "ui").mkdir(exist_ok=True)
    shutil.copy(MATHJAX / "ui" / "safe.js", target / "ui" / "safe.js")
    shutil.copytree(MATHJAX / "input" / "tex" / "extensions", target / "input" / "tex" / "extensions",
                    dirs_exist_ok=True)
    fonts = MATHJAX / "output" / "chtml" / "fonts" / "woff-v2"
    shutil.copytree(fonts, target / "output" / "chtml" / "fonts" / "woff-v2", dirs_exist_ok=True)
    return True
