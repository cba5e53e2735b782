"""The term's page, ``grading/course.html``: the picture of the class over the term (a PNG, embedded, with its
alt text) above the table of ``course.csv``'s rows, one page that works offline (for ``grader/course.py``).

The picture shows, per assignment, the spread of the percent scores and the share of the class that handed it
in, and for a class of at most ``limits.HEATMAP_MAX_STUDENTS`` each student's percent per assignment.
"""

from __future__ import annotations

import base64
import html
import io

from grader import limits


def page(rows: list[dict], term: list, columns: list[str]) -> str:
    """The class over the term: the picture (an embedded PNG with its alt text) and the table of ``rows`` in
    ``columns``, one offline page. ``term``: the graded assignments (``grader.course.Graded``)."""
    png, alt = picture(rows, term)
    out_of = {g.assignment: f" <small>(of {cell(g.max_score)})</small>" for g in term}
    heads = "".join(f"<th scope='col'>{html.escape(c)}{out_of.get(c, '')}</th>" for c in columns)
    body = "".join(_table_row(r, columns) for r in rows)
    mean = sum(r["percent"] or 0 for r in rows) / len(rows) if rows else 0
    title = "The class over the term"
    heat = "; below, each student's percent per assignment" if 0 < len(rows) <= limits.HEATMAP_MAX_STUDENTS else ""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_STYLE}</style></head>"
            f"<body><main><h1>{title}</h1>"
            f"<p>{len(rows)} student(s){_none_in(rows)}, {len(term)} assignment(s) graded so far, out of "
            f"{cell(sum(g.max_score for g in term))} points; the students' mean is {mean:.1f}%.</p>"
            f"<figure><img src='data:image/png;base64,{base64.b64encode(png).decode()}' alt='{html.escape(alt)}'>"
            f"<figcaption>Per assignment (by its number): the spread of the percent scores of the graded "
            f"submissions and the share of the class that handed it in{heat}. The numbers are in the table."
            f"</figcaption></figure>"
            f"<table><caption>Points per assignment (a dash: no graded submission), total and counts"
            f"</caption><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table></main></body></html>")


def _none_in(rows: list[dict]) -> str:
    """How many of the class (the platform's roster, when a run had one) have no graded submission at all."""
    none = sum(1 for r in rows if not r["submitted"])
    return f" ({none} with no graded submission)" if none else ""


def cell(value) -> str:
    """A CSV or table cell: a number without float noise, nothing for None, text as it is (cleaned already)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{round(value, 3):g}"
    return str(value)


def _table_row(row: dict, columns: list[str]) -> str:
    cells = []
    for c in columns:
        text = html.escape(cell(row[c])) if row[c] is not None else "&ndash;<span class='sr'> not submitted</span>"
        cells.append(f"<th scope='row'>{text}</th>" if c == "student" else f"<td>{text}</td>")
    return f"<tr>{''.join(cells)}</tr>"


_STYLE = ("body{font-family:system-ui,sans-serif;color:#1a1a1a;background:#fff;margin:1.5rem}"
          "img{max-width:100%;height:auto}table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
          "th,td{border:1px solid #767676;padding:.25rem .5rem;text-align:right}"
          "th[scope=row],td:nth-child(2),td:nth-child(3){text-align:left}thead th{background:#e8e8e8}"
          "tbody tr:nth-child(even){background:#f4f4f4}caption{text-align:left;font-weight:bold;margin:.5rem 0}"
          ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}")


def _percents(rows: list[dict], g) -> list[float]:
    return [100 * r[g.assignment] / g.max_score if g.max_score else 0.0
            for r in rows if r[g.assignment] is not None]


def picture(rows: list[dict], term: list) -> tuple[bytes, str]:
    """(PNG, alt text): per assignment the spread of percent scores (box plot) and the share of the class that
    handed it in; with a class of at most limits.HEATMAP_MAX_STUDENTS, each student's percent per assignment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [g.assignment.split("_")[0] for g in term]
    spread = [_percents(rows, g) for g in term]
    heat = 0 < len(rows) <= limits.HEATMAP_MAX_STUDENTS
    heights = [3, 1.5, 0.25 * len(rows) + 1] if heat else [3, 1.5]
    fig, axes = plt.subplots(len(heights), 1, figsize=(max(7, 0.7 * len(term) + 3), 1.4 * sum(heights)),
                             height_ratios=heights)
    _boxes(axes[0], spread, labels)
    rates = [100 * len(s) / len(rows) if rows else 0.0 for s in spread]
    bars = axes[1].bar(range(len(term)), rates, color="#2f5f98")
    axes[1].bar_label(bars, labels=[f"{len(s)}/{len(rows)}" for s in spread], padding=2)
    axes[1].set(ylim=(0, 115), yticks=[0, 50, 100], ylabel="% of the class", xticks=range(len(term)),
                xticklabels=labels, xlabel="assignment", title="Share of the class with a graded submission")
    if heat:
        _heat_map(fig, axes[2], rows, term, labels)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue(), _alt(rows, term, spread, heat)


def _boxes(ax, spread: list[list[float]], labels: list[str]) -> None:
    ax.boxplot([s or [float("nan")] for s in spread], positions=range(len(spread)), widths=0.5)
    for i, s in enumerate(spread):
        ax.plot([i] * len(s), s, "o", color="#2f5f98", alpha=0.5, markersize=4)
    ax.set(ylim=(-5, 105), ylabel="percent of the points", xticks=range(len(spread)), xticklabels=labels,
           xlabel="assignment", title="Percent scores per assignment (graded submissions)")


def _heat_map(fig, ax, rows: list[dict], term: list, labels: list[str]) -> None:
    import numpy as np

    values = np.array([[100 * r[g.assignment] / g.max_score if r[g.assignment] is not None and g.max_score
                        else np.nan for g in term] for r in rows])
    shown = ax.imshow(values, aspect="auto", cmap="viridis", vmin=0, vmax=100, interpolation="nearest")
    ax.set_facecolor("#d9d9d9")  # no graded submission
    for (i, j), value in np.ndenumerate(values):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.0f}", ha="center", va="center", color=_ink(shown.cmap(value / 100)))
    names = [r["student"][:24].replace("$", r"\$") for r in rows]  # a $ would start matplotlib's math text
    ax.set(xticks=range(len(term)), xticklabels=labels, yticks=range(len(rows)), yticklabels=names,
           xlabel="assignment", title="Percent per student and assignment (grey: no graded submission)")
    fig.colorbar(shown, ax=ax, label="percent", fraction=0.03, pad=0.02)


def _ink(rgba) -> str:
    """Black or white, whichever contrasts more with the colour ``rgba`` (WCAG's relative luminance)."""
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "#ffffff"


def _alt(rows: list[dict], term: list, spread: list[list[float]], heat: bool) -> str:
    """What the picture shows, with its numbers: each assignment's median, range and submissions."""
    parts = []
    for g, s in zip(term, spread, strict=True):
        ordered = sorted(s)
        middle = (ordered[(len(s) - 1) // 2] + ordered[len(s) // 2]) / 2 if s else None
        spread_text = f"median {middle:.0f}%, lowest {ordered[0]:.0f}%, highest {ordered[-1]:.0f}%, " if s else ""
        parts.append(f"{g.assignment}: {spread_text}{len(s)} of {len(rows)} handed in")
    heat_text = (" A heat map shows each student's percent on each assignment, rows in the order of the table." if heat
                 else f" No heat map: the class has more than {limits.HEATMAP_MAX_STUDENTS} students; the table holds "
                 "every value.")
    return (f"Box plots of the percent scores of {len(rows)} students on each of the {len(term)} graded assignments, "
            f"and the share of the class that handed each in. " + "; ".join(parts) + "." + heat_text)
