"""The similarity report's page, ``grading/<id>/similarity.html`` (for ``grader/reporting/similarity.py``): what the
page can and cannot see, the students whose code matches the published solution, the table of pairs and groups, rarest
first, and the code of the first ``limits.MAX_SHOWN`` side by side with the matches marked. One page that loads
nothing; every student's text, names too, is escaped.
"""

from __future__ import annotations

import html

from grader import limits

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
spacing still match. A solution rewritten in other steps is not, and two students who both wrote the short,
obvious answer may be alike without copying anything. Only the first {cap:,} characters of each student's code
are compared.</p>
<p>Students whose code matches the published solution are listed on their own: worth a word, but not a pair.
Between students the solution's code counts for nothing, so a pair's score is over the code outside it. Students
who handed in the same code are one entry. Entries come rarest first: by the share of their code that they have
in common and few others have (a passage counts fully when no other student has it, half when one other does, a
third when two do, and so on), so two students who share what nobody else wrote come before students who share a
common answer.</p>
<p>An entry is a reason to read the submissions, never a verdict, and no score is changed by this page.</p>
</div>"""


def page(found, spans: list, threshold: float, n_students: int, noise: int) -> str:
    """The page of ``found`` (``grader.reporting.similarity.Found``), with the matched ``spans`` of the entries
    shown."""
    head = f"<p>{n_students} submissions; {len(found.codes)} with code of their own were compared.</p>"
    if found.skipped:
        head += (f"<p>Not compared, with no code of their own beyond the template: "
                 f"{html.escape(', '.join(found.skipped))}.</p>")
    body = _solution(found.solution, threshold) + _entries(found.pairs, threshold)
    body += "".join(_side_by_side(i, p, found.codes, where) for i, (p, where) in enumerate(zip(found.pairs, spans,
                                                                                              strict=False), 1))
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>Similarity of submissions</title><style>{STYLE}</style></head><body><main>"
            f"<h1>Similarity of submissions</h1>{SEES.format(noise=noise, cap=limits.MAX_CODE_CHARS)}{head}{body}"
            "</main></body></html>\n")


def _entries(pairs: list, threshold: float) -> str:
    """The table of pairs and groups."""
    if not pairs:
        return f"<h2>Students alike</h2><p><strong>No pair of submissions scores {threshold:.0%} or more.</strong></p>"
    e = html.escape
    rows = "".join(f"<tr><td class='num'>{i}</td><td>{e(', '.join(p.a))}</td><td>{_other(p)}</td>"
                   f"<td class='num'>{p.score:.0%}</td><td class='num'>{p.rarity:.0%}</td><td>{_link(i)}</td></tr>"
                   for i, p in enumerate(pairs[:limits.MAX_LISTED], 1))
    more = f"<p>and {len(pairs) - limits.MAX_LISTED} more, not listed.</p>" if len(pairs) > limits.MAX_LISTED else ""
    more += f"<p>The code of the first {limits.MAX_SHOWN} is shown below.</p>" if len(pairs) > limits.MAX_SHOWN else ""
    heads = "".join(f"<th scope='col'>{h}</th>" for h in ("#", "students", "and", "score", "rarity", "code"))
    return (f"<h2>Students alike</h2><table><caption>{len(pairs)} pair(s) and group(s) at or above "
            f"{threshold:.0%}, rarest first</caption><thead><tr>{heads}</tr></thead><tbody>{rows}</tbody>"
            f"</table>{more}")


def shown(p) -> tuple[str, str]:
    """The two students whose code the page shows of the entry ``p``: a group's first two, else each side's
    first."""
    return (p.a[0], p.a[1]) if not p.b else (p.a[0], p.b[0])


def _solution(matched: list | None, threshold: float) -> str:
    """The students whose code matches the published solution, one row per code."""
    if matched is None:
        return "<h2>The published solution</h2><p>No published solution was compared.</p>"
    if not matched:
        return f"<h2>The published solution</h2><p>No student's code matches it at {threshold:.0%} or more.</p>"
    rows = "".join(f"<tr><td class='num'>{score:.0%}</td><td class='num'>{len(g)}</td>"
                   f"<td>{html.escape(', '.join(g))}</td></tr>" for g, score in matched)
    return (f"<h2>The published solution</h2><p>{sum(len(g) for g, _ in matched)} student(s) handed in code that "
            f"matches the published solution at {threshold:.0%} or more: worth a word with each, but not a pair. "
            "Students who handed in the same code share a row.</p><table><caption>Students whose code matches the "
            "published solution</caption><thead><tr><th scope='col'>score</th><th scope='col'>students</th>"
            f"<th scope='col'>who</th></tr></thead><tbody>{rows}</tbody></table>")


def _other(p) -> str:
    return html.escape(", ".join(p.b)) if p.b else f"the same code ({len(p.a)} students)"


def _link(i: int) -> str:
    return f"<a href='#pair-{i}'>entry {i}'s code</a>" if i <= limits.MAX_SHOWN else "not shown"


def _side_by_side(i: int, p, codes: dict[str, str], spans) -> str:
    e, (a, b) = html.escape, shown(p)
    left, right = (_marked(codes[s], where) for s, where in zip((a, b), spans, strict=True))
    return (f"<section id='pair-{i}'><h2>{i}. {e(', '.join(p.a))} and {_other(p)}: {p.score:.0%}</h2>"
            "<p>Matched code is marked (highlighted, bold and underlined).</p>"
            f"<table class='code'><caption>The code of {e(a)} and {e(b)} side by side</caption>"
            f"<thead><tr><th scope='col'>{e(a)}</th><th scope='col'>{e(b)}</th></tr></thead>"
            f"<tbody><tr><td><pre>{left}</pre></td><td><pre>{right}</pre></td></tr></tbody></table></section>")


def _marked(code: str, spans) -> str:
    """``code`` escaped, with each span (start, end) in ``<mark>``."""
    out, at = [], 0
    for start, end in spans:
        start = max(start, at)
        if end <= start:
            continue
        out += [html.escape(code[at:start]), "<mark>", html.escape(code[start:end]), "</mark>"]
        at = end
    return "".join([*out, html.escape(code[at:])])
