"""Step 6: the report: grades.csv (from the gradebook's scores), a picture of the class, and the
instructor's view of each submission: what went wrong, what the sandbox stopped, what to read.
"""

from __future__ import annotations

import csv
from pathlib import Path


def clean(text: str, limit: int = 2000) -> str:
    """Text that came from a submission, safe for a terminal and a spreadsheet: no control characters
    (so no terminal escapes), and no leading ``= + - @`` that a spreadsheet would run as a formula."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))[:limit]
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_csv(out: Path, rows: list[dict], cells: list[str]) -> None:
    columns = ["student", "score", "max_score", *cells, "problems", "sandbox", "flags", "file"]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: clean(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows)


def print_table(rows: list[dict]) -> None:
    width = max([len("student"), *(len(r["student"]) for r in rows)])
    print(f"\n{'student':<{width}}  score  problems")
    for r in rows:
        print(f"{r['student']:<{width}}  {r['score']:>2g}/{r['max_score']:g}  {r['problems']}")
        for column, label in (("sandbox", "the sandbox stopped"), ("flags", "read this")):
            if r[column]:
                print(f"{'':<{width}}         {label}: {r[column]}")


def write_summary(out: Path, rows: list[dict], cells: list[str], max_points: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(rows), 1)
    rates = [sum(float(r[c]) >= max_points[c] for r in rows) / n for c in cells]
    scores = [float(r["score"]) for r in rows]
    total = sum(max_points.values())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.barh(cells[::-1], rates[::-1], color="#4a7fc1")
    ax1.set_xlim(0, 1)
    ax1.set_xlabel("fraction of submissions with full points")
    ax1.set_title("Pass rate per exercise")
    ax2.hist(scores, bins=[x - 0.5 for x in range(int(total) + 2)], color="#4a7fc1", edgecolor="white")
    ax2.set_xlabel(f"score (out of {total:g})")
    ax2.set_ylabel("submissions")
    ax2.set_title(f"Scores of {len(rows)} submission(s)")
    fig.tight_layout()
    fig.savefig(out / "summary.png", dpi=110)
    plt.close(fig)
    print("\npass rate per exercise:")
    for c, rate in zip(cells, rates, strict=True):
        print(f"  {c:<28} {rate:6.0%}  {'#' * round(20 * rate)}")
