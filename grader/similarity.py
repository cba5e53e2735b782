"""Pairs of submissions whose code is unusually alike, for a person to read: never a verdict, never a score change.

A student's own code is what they wrote in the rebuilt notebook (``grader/collect.py``): the source of every
answer cell of the release, and every code cell the release does not have (cells the student added). Every line
that is a line of the release's code (the template: ``# YOUR CODE HERE``, ``raise NotImplementedError()``, the
given signatures; the visible checks; the setup), comments and spaces aside, is taken out first, and the
release's own fingerprints are copydetect's boilerplate, so what everyone was handed never counts.

The comparison is copydetect's (PyPI ``copydetect``): pygments tokens with every variable, attribute and
function name replaced by one letter, comments and whitespace dropped, then every k-gram of the result
fingerprinted (winnowing, Schleimer, Wilkerson and Aiken, SIGMOD 2003, with copydetect's default window of 1).
Renamed variables and reordered functions or lines keep their fingerprints; a solution rewritten in other steps
does not. copydetect was chosen over ``pycode_similar`` (1.4, 2020), which needs ``ast.parse`` to succeed (an
IPython line or a syntax error loses the whole submission), compares functions only (exercise 1 of chapter 4
is not one) and one reference against the others, with no boilerplate; copydetect tokenizes any text, takes
the template as boilerplate, and says where the matches are, which the page marks. Its ``CodeFingerprint``
reads from a stream (``fp=``), so nothing is written to disk.

Bounded for a class: each student is fingerprinted once, on at most ``limits.MAX_CODE_CHARS`` characters (answer
cells first); a pair then costs a set intersection and, for each one, an OR of the positions its shared
fingerprints cover, kept as the bits of an int (``_Print``): the same number as copydetect's
``compare_files`` (a test keeps them equal), without its numpy arrays per pair. ``compare_files`` itself
gives the matched spans of the pairs the page shows. A student whose code cannot be read has none.

A pair's score is copydetect's similarity (the share of one's fingerprinted code that the other has) averaged
over the two, so a short answer that is all inside a longer one is not a full match.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from pathlib import Path

from grader import limits
from tools import nbmeta

NOISE = 25  # characters of normalised code (copydetect's default noise threshold): a shorter match is not one
WINDOW = 1  # winnowing window, guarantee - noise + 1: copydetect's defaults (both 25) keep every k-gram
# Measured on chapter 4: its solution against students whose four answers are all from the bank (tests/bank/a04.py,
# 560 of them, wrong or differently right): median 0.32, largest 0.58; against a correct answer written apart from
# it (tests/test_similarity.py): 0.25. Students with 1, 2 or 3 of the 4 answers the solution's, the rest from the
# bank: 7%, 40% and 100% of them at 0.7 or more. A copy with every name changed and its functions reordered: 0.96,
# and 0.83 with 30 lines of scratch work added.
THRESHOLD = 0.7
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")  # not text on a page (lone surrogates too)

Span = tuple[int, int]


@dataclass(frozen=True)
class Pair:
    """Students ``a`` and ``b`` (``a < b``), their ``score`` in [0, 1], and ``matches``: how many characters
    of ``a``'s normalised code ``b`` has, and of ``b``'s that ``a`` has (the score's numerators)."""

    a: str
    b: str
    score: float
    matches: tuple[int, int]


def report(release, notebooks: dict, out: Path, threshold: float = THRESHOLD) -> list[Pair]:
    """Every pair of ``notebooks`` (student -> rebuilt notebook) scoring at least ``threshold``, highest first;
    writes the page ``out``. One student's code never makes it raise: code that cannot be read counts as none."""
    template = _fingerprint(_release_code(release), window=1)
    boilerplate = sorted(template.hash_idx) if template else []
    codes, prints, skipped = {}, {}, []
    for student in sorted(notebooks):
        code = _safe_code(release, notebooks[student])
        fingerprint = _fingerprint(code, boilerplate=boilerplate) if code.strip() else None
        if fingerprint is None or not fingerprint.hash_idx:
            skipped.append(student)
        else:
            codes[student], prints[student] = code, _Print(fingerprint)
    pairs, students = [], list(prints)
    for i, a in enumerate(students):
        for b in students[i + 1:]:
            score, matches = _score(prints[a], prints[b])
            if score >= threshold:
                pairs.append(Pair(a, b, score, matches))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    shown = {(p.a, p.b): _matched_spans(prints[p.a], prints[p.b], codes[p.a], codes[p.b])
             for p in pairs[:limits.MAX_SHOWN]}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(pairs, codes, shown, threshold, len(notebooks), skipped), encoding="utf-8")
    return pairs


def student_code(release, nb) -> str:
    """The student's own code in ``nb``: answer cells, then added cells (so that scratch work never pushes an
    answer past the cap), each under a comment naming it, with every line equal to a line of the release's code
    taken out; at most ``limits.MAX_CODE_CHARS`` characters of printable text."""
    lines = [line for cell in release.cells if cell.cell_type == "code" for line in _text(cell.source).splitlines()]
    template = {_bare(line) for line in lines} | {line.strip() for line in lines}  # code, and comments as they are
    template.discard("")
    in_release = {nbmeta.grade_id(c) for c in release.cells} - {None}
    answers = {nbmeta.grade_id(c) for c in release.cells if nbmeta.is_solution(c) and not nbmeta.is_graded(c)}
    mine, added, size = [], [], 0
    for cell in nb.cells:
        gid = nbmeta.grade_id(cell)
        if cell.get("cell_type") != "code" or (gid in in_release and gid not in answers):
            continue
        if gid not in answers and size >= limits.MAX_CODE_CHARS:
            continue  # a flood of added cells is not read past the cap
        lines = [line for line in _text(cell.get("source", ""), limits.MAX_CODE_CHARS).splitlines()
                 if _bare(line) not in template and line.strip() not in template]
        if any(_bare(line) for line in lines):  # code, not only comments
            source = "\n".join(lines)
            if gid in answers:
                mine.append((gid, source))
            else:
                added.append(source)
            size += len(source)
    named = [*mine, *((f"added cell {i}", source) for i, source in enumerate(added, 1))]
    return _join(named)[:limits.MAX_CODE_CHARS]


def _join(named) -> str:
    return "".join(f"# {name}\n{source}\n" for name, source in named)


def _bare(line: str) -> str:
    """A line without its comment and its spaces: a template line with a comment added or spaced otherwise is
    still the template."""
    return re.sub(r"\s+", "", line.split("#", 1)[0])


# ------------------------------------------------------------------ fingerprints


def _safe_code(release, nb) -> str:
    try:
        return student_code(release, nb)
    except Exception:  # noqa: BLE001 - a notebook that cannot be read has no code to compare
        return ""


def _release_code(release) -> str:
    """The release's code as it runs, then its answer cells laid out as :func:`student_code` lays out a
    student's (so that the template's k-grams across two answer cells are boilerplate too)."""
    answers = [(nbmeta.grade_id(c), _text(c.source)) for c in release.cells
               if c.cell_type == "code" and nbmeta.is_solution(c) and not nbmeta.is_graded(c)]
    return "\n".join(_text(c.source) for c in release.cells if c.cell_type == "code") + "\n" + _join(answers)


def _fingerprint(code: str, boilerplate=(), window: int = WINDOW):
    """copydetect's fingerprint of ``code`` (tokens normalised, winnowed, ``boilerplate`` hashes left out),
    or None when pygments or copydetect cannot take it."""
    from copydetect import CodeFingerprint

    try:
        return CodeFingerprint("student.py", NOISE, window, list(boilerplate), language="python",
                               fp=io.StringIO(code))
    except Exception:  # noqa: BLE001 - one student's code never stops the report
        return None


class _Print:
    """A student's fingerprint, with what each of its hashes covers of the normalised code as the bits of an
    int, so that a pair's score is two ORs and two bit counts: the same number as ``compare_files`` (the
    positions its matched k-grams cover, over the positions all its k-grams cover), without its numpy arrays."""

    def __init__(self, fingerprint):
        self.fingerprint = fingerprint
        run = (1 << fingerprint.k) - 1
        self.covers: dict[int, int] = {}
        for hash_value, starts in fingerprint.hash_idx.items():
            bits = 0
            for start in starts:
                bits |= run << int(start)
            self.covers[int(hash_value)] = bits
        self.coverage = int(fingerprint.token_coverage)


def _score(a: _Print, b: _Print) -> tuple[float, tuple[int, int]]:
    """copydetect's similarity of the two averaged (the share of each one's code that the other has), and the
    characters of normalised code of each that the other has."""
    common = a.covers.keys() & b.covers.keys()
    if not common:
        return 0.0, (0, 0)
    matched = []
    for mine in (a, b):
        bits = 0
        for hash_value in common:
            bits |= mine.covers[hash_value]
        matched.append(bits.bit_count())
    return min(1.0, (matched[0] / a.coverage + matched[1] / b.coverage) / 2), (matched[0], matched[1])


def _matched_spans(a: _Print, b: _Print, code_a: str, code_b: str) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """Where the two match in their code, from copydetect's ``compare_files``."""
    from copydetect import compare_files

    try:
        _, _, (slices_a, slices_b) = compare_files(a.fingerprint, b.fingerprint)
        return _spans(slices_a, len(code_a)), _spans(slices_b, len(code_b))
    except Exception:  # noqa: BLE001 - the pair is listed all the same, its code shown unmarked
        return (), ()


def _spans(slices, length: int) -> tuple[Span, ...]:
    """copydetect's slices (a 2 x N array of starts and ends) as sorted spans within the text."""
    if len(slices) != 2 or not len(slices[0]):
        return ()
    spans = sorted((max(0, min(int(s), length)), max(0, min(int(e), length))) for s, e in zip(*slices, strict=True))
    return tuple((s, e) for s, e in spans if e > s)


def _text(source, limit: int | None = None) -> str:
    """A cell's source (its first ``limit`` characters) as printable text: lone surrogates, NUL and other control
    characters (except tab and newline) become U+FFFD, so that the page is valid UTF-8 and HTML and the spans
    still line up."""
    text = source if isinstance(source, str) else "".join(map(str, source)) if isinstance(source, list) else ""
    return _CONTROL.sub("\ufffd", text[:limit].replace("\r\n", "\n").replace("\r", "\n"))


# ------------------------------------------------------------------ the page

STYLE = """body{font-family:system-ui,sans-serif;color:#1a1a1a;background:#fff;max-width:80rem;margin:1rem auto;
padding:0 1rem;line-height:1.5}a{color:#0b5394}table{border-collapse:collapse}th,td{border:1px solid #767676;
padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#f0f0f0}td.num{text-align:right}
.code td{width:50%}pre{margin:0;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85rem}
mark{background:#ffe066;color:#000;text-decoration:underline;text-decoration-thickness:2px;font-weight:bold}
.note{border-left:4px solid #0b5394;padding:.25rem .75rem;background:#f4f8fc}"""

SEES = """<div class="note">
<p><strong>What this page can and cannot see.</strong> Each student's own code (answer cells and added cells,
without the template and the visible checks that everyone was given) is cut into tokens, every name is replaced
by one letter, and overlapping runs of {noise} characters of the result are fingerprinted (copydetect's
winnowing). So renamed variables and functions, functions and lines in another order, other comments and
spacing still match.
A solution rewritten in other steps is not, and two students who both wrote the short, obvious answer may be
alike without copying anything. Only the first {cap:,} characters of each student's code are compared.</p>
<p>A pair is a reason to read both submissions, never a verdict, and no score is changed by this page.</p>
</div>"""


def page(pairs: list[Pair], codes: dict[str, str], shown: dict, threshold: float, n_students: int,
         skipped: list[str]) -> str:
    """The report as one HTML page that loads nothing; every student's text (names too) is escaped."""
    e = html.escape
    head = (f"<p>{n_students} submissions; {len(codes)} with code of their own were compared, pair by pair. "
            f"Pairs scoring at least {threshold:.0%} (the share of each one's fingerprinted code that the other "
            f"has, averaged over the two) are listed, highest first.</p>")
    if skipped:
        head += (f"<p>Not compared, with no code of their own beyond the template: "
                 f"{e(', '.join(skipped))}.</p>")
    if not pairs:
        body = f"<p><strong>No pair of submissions scores {threshold:.0%} or more.</strong></p>"
    else:
        rows = "".join(
            f"<tr><td class='num'>{i}</td><td>{e(p.a)}</td><td>{e(p.b)}</td><td class='num'>{p.score:.0%}</td>"
            f"<td>{_link(i)}</td></tr>" for i, p in enumerate(pairs[:limits.MAX_LISTED], 1))
        more = (f"<p>and {len(pairs) - limits.MAX_LISTED} more pairs, not listed.</p>"
                if len(pairs) > limits.MAX_LISTED else "")
        more += (f"<p>The code of the first {limits.MAX_SHOWN} pairs is shown below.</p>"
                 if len(pairs) > limits.MAX_SHOWN else "")
        body = (f"<table><caption>{len(pairs)} pair{'s' if len(pairs) != 1 else ''} at or above "
                f"{threshold:.0%}</caption><thead><tr><th scope='col'>#</th><th scope='col'>first student</th>"
                f"<th scope='col'>second student</th><th scope='col'>score</th><th scope='col'>code</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>{more}")
        body += "".join(_side_by_side(i, p, codes, shown[p.a, p.b]) for i, p in enumerate(pairs[:limits.MAX_SHOWN], 1))
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>Similarity of submissions</title><style>{STYLE}</style></head><body><main>"
            f"<h1>Similarity of submissions</h1>{SEES.format(noise=NOISE, cap=limits.MAX_CODE_CHARS)}{head}{body}"
            "</main></body></html>\n")


def _link(i: int) -> str:
    return f"<a href='#pair-{i}'>pair {i}'s code</a>" if i <= limits.MAX_SHOWN else "not shown"


def _side_by_side(i: int, p: Pair, codes: dict[str, str], spans) -> str:
    e = html.escape
    left, right = (_marked(codes[s], where) for s, where in zip((p.a, p.b), spans, strict=True))
    return (f"<section id='pair-{i}'><h2>{i}. {e(p.a)} and {e(p.b)}: {p.score:.0%}</h2>"
            "<p>Matched code is marked (highlighted, bold and underlined).</p>"
            f"<table class='code'><caption>The code of {e(p.a)} and {e(p.b)} side by side</caption>"
            f"<thead><tr><th scope='col'>{e(p.a)}</th><th scope='col'>{e(p.b)}</th></tr></thead>"
            f"<tbody><tr><td><pre>{left}</pre></td><td><pre>{right}</pre></td></tr></tbody></table></section>")


def _marked(code: str, spans: tuple[Span, ...]) -> str:
    """``code`` escaped, with each span in ``<mark>``."""
    out, at = [], 0
    for start, end in spans:
        start = max(start, at)
        if end <= start:
            continue
        out += [html.escape(code[at:start]), "<mark>", html.escape(code[start:end]), "</mark>"]
        at = end
    return "".join([*out, html.escape(code[at:])])
