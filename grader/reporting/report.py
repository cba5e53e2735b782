"""Step 6: the report: grades.csv (the gradebook's points), a picture of the class, and a closing summary that
fits a screen however large the class: the score distribution, the pass rate of each exercise, and only the
submissions that need attention (every row is in grades.csv).
"""

from __future__ import annotations

import csv
from pathlib import Path

from grader import limits
from grader.safe_text import clean

# Columns after the score and the points of each exercise (see book/instructors.md).
TAIL = ["status", "late", "platform", "platform_id", "name", "attempt", "manual", "problems", "sandbox", "flags",
        "file"]


def announce(run_info: dict, found: int, to_grade: int, reused: int, pool, quiet: bool) -> None:
    """The run's settings, printed (unless ``quiet``); ``pool``: where the submissions are graded
    (``workers.Local`` or ``cluster.Cluster``), which ``run_info`` records."""
    where = "each in its own sandbox" if run_info["sandboxed"] else "WITHOUT a sandbox"
    kept = f"; {reused} result(s) kept from the last run" if reused else ""
    run_info["graded"] = pool.where
    if not quiet:
        print(f"Grading {to_grade} submission(s) of {run_info['assignment']} (each cell stopped after "
              f"{run_info['timeout']} s, each submission after {run_info['budget']} s in all, "
              f"{max(1, min(pool.size, to_grade))} at a time {pool.where}, {where}); {found} file(s) found{kept} ...",
              flush=True)


def attention_line(sub, book) -> str:
    """One line for a submission that needs attention as soon as it is graded, or "" when it does not."""
    parts = [*sub.problems, *(f"sandbox: {s}" for s in book.sandboxes.get(sub.student, [])),
             *(f"read: {f}" for f in book.flagged.get(sub.student, []))]
    if not parts:
        return ""
    score = f"{sub.score:g}" if sub.graded else "not graded"
    return clean(f"! {sub.student} ({score}): " + "; ".join(parts), limits.LINE_CHARS)


def rows(subs: list, max_points: dict, unsafe: bool, book) -> list[dict]:
    """One grades.csv row per file found (``book``: what the bookkeeping recorded of each)."""
    total, table = sum(max_points.values()), []
    for sub in subs:
        counted = sub.status != "superseded"
        row = {"student": sub.student, "file": sub.source, "max_score": total, "score": sub.score if counted else "",
               "status": sub.status, "late": sub.late, "platform": sub.platform, "platform_id": sub.platform_id,
               "name": sub.name, "attempt": sub.attempt, "manual": " ".join(book.manual.get(sub.student, [])),
               "problems": "; ".join(sub.problems),
               "sandbox": "UNSANDBOXED" if unsafe else "; ".join(book.sandboxes.get(sub.student, [])),
               "flags": "; ".join(book.flagged.get(sub.student, [])) if sub.graded else ""}
        row.update({c: sub.points.get(c, 0.0) if counted else "" for c in max_points})
        row["summary"] = summary_line(sub.score, sub.points, max_points) if counted else ""
        table.append(row)
    return table


def summary_line(score: float, points: dict, max_points: dict) -> str:
    """The feedback comment a platform shows beside the grade: points per exercise, in fixed words."""
    parts = [f"{c} {float(points.get(c, 0.0)):g}/{m:g}" for c, m in max_points.items()]
    return f"{float(score):g}/{sum(max_points.values()):g} ({', '.join(parts)}); details on your feedback page"


def write_csv(out: Path, table: list[dict], cells: list[str]) -> None:
    columns = ["student", "score", "max_score", *cells, *TAIL]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: clean(v) if isinstance(v, str) else v for k, v in row.items()} for row in table)


def _counted(table: list[dict]) -> list[dict]:
    return [r for r in table if r["status"] != "superseded"]


def pass_rates(table: list[dict], max_points: dict[str, float]) -> dict[str, float]:
    counted = _counted(table)
    return {c: sum(float(r[c]) >= m for r in counted) / max(len(counted), 1) for c, m in max_points.items()}


def write_summary(out: Path, table: list[dict], cells: list[str], max_points: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = pass_rates(table, max_points)
    scores = [float(r["score"]) for r in _counted(table)]
    total = sum(max_points.values())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.barh(cells[::-1], [rates[c] for c in cells[::-1]], color="#4a7fc1")
    ax1.set_xlim(0, 1)
    ax1.set_xlabel("fraction of submissions with full points")
    ax1.set_title("Pass rate per exercise")
    ax2.hist(scores, bins=[x - 0.5 for x in range(int(total) + 2)], color="#4a7fc1", edgecolor="white")
    ax2.set_xlabel(f"score (out of {total:g})")
    ax2.set_ylabel("submissions")
    ax2.set_title(f"Scores of {len(scores)} submission(s)")
    fig.tight_layout()
    fig.savefig(out / "summary.png", dpi=110)
    plt.close(fig)


def distribution(table: list[dict], total: float, bins: int = 5) -> list[tuple[str, int]]:
    """(range of scores, submissions in it), ``bins`` equal ranges of the score from 0 to ``total``."""
    scores = [float(r["score"]) for r in _counted(table)]
    edges = [total * i / bins for i in range(bins + 1)]
    out = []
    for i in range(bins):
        lo, hi = edges[i], edges[i + 1]
        n = sum(lo <= s < hi or (i == bins - 1 and s == hi) for s in scores)
        out.append((f"{lo:g}-{hi:g}", n))
    return out


def needs_attention(row: dict, unsafe: bool) -> bool:
    return bool(row["problems"] or row["flags"] or (row["sandbox"] and not unsafe)) and row["status"] != "superseded"


def closing(out: Path, table: list[dict], max_points: dict, run_info: dict, progress, has_mathjax: bool,
            similar, exported: dict | None, unsafe: bool) -> None:
    """The closing summary: a screen at most, whatever the size of the class."""
    from grader.running import sandbox

    counted, total = _counted(table), sum(max_points.values())
    print(f"\n{len(counted)} submission(s) of {run_info['assignment']}: mean score "
          f"{sum(float(r['score']) for r in counted) / max(len(counted), 1):.1f}/{total:g}")
    width = max([1, *(n for _, n in distribution(table, total))])
    for span, n in distribution(table, total):
        print(f"  {span:>9}  {n:4d}  {'#' * round(30 * n / width)}")
    print("full points per exercise:")
    for c, rate in pass_rates(table, max_points).items():
        print(f"  {c:<28} {rate:6.0%}  {'#' * round(20 * rate)}")
    attention = [r for r in table if needs_attention(r, unsafe)]
    if attention:
        print(f"{len(attention)} of {len(counted)} submission(s) need your attention (problems, sandbox and flags in "
              "grades.csv):")
        for r in attention[:limits.ATTENTION_SHOWN]:
            print("  " + clean(f"{r['student']}: {r['problems'] or r['flags'] or r['sandbox']}", limits.LINE_CHARS))
        if len(attention) > limits.ATTENTION_SHOWN:
            print(f"  ... and {len(attention) - limits.ATTENTION_SHOWN} more: see grades.csv")
    else:
        print("every submission was graded cleanly")
    superseded = [r for r in table if r["status"] == "superseded"]
    if superseded:
        print(f"{len(superseded)} earlier submission(s) not graded, a later one of the same student was "
              "(status superseded in grades.csv)")
    pasted = sum(len(students) for students, _ in similar.solution or [])
    print((f"{len(similar.pairs)} pair(s) or group(s) of submissions unusually alike" if similar.pairs else
           "no pair of submissions is unusually alike") + (f"; {pasted} submission(s) match the published solution"
                                                            if pasted else "") + f": {out / 'similarity.html'}")
    if exported is not None:
        print(f"grades for the platform: {exported['import']}; {len(exported['without_submission'])} student(s) "
              f"without a graded submission, {len(exported['without_match'])} submission(s) without a match (see "
              f"{exported['unmatched']})")
        if exported.get("feedback_zip"):
            print(f"feedback pages for the platform's upload, in one zip: {exported['feedback_zip']}")
    print(f"wrote {out / 'grades.csv'}, {out / 'summary.png'} and {len(table)} page(s) in {out / 'feedback'}")
    if progress.done:
        print(f"{progress.elapsed() / progress.done:.1f} s per submission ({progress.done} graded in "
              f"{progress.elapsed():.0f} s)")
    if not has_mathjax:
        print("note: the book's MathJax is not installed (npm ci), so feedback pages show formulas as TeX")
    if unsafe:
        print(f"WARNING: graded without a sandbox ({sandbox.UNSAFE}=1): student code ran with your privileges")
    print(f"hidden inputs drawn from seed {run_info['seed']} ({run_info['seed_from']}); to grade again with the same "
          f"questions: --seed {run_info['seed']}")
    print(run_info["limits"])
