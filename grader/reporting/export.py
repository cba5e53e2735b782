"""Grades and feedback back to the learning platforms, once a class is graded (``--export``).

Grades back: :func:`export` fills Canvas's gradebook export (``lib/gradebook_exporter.rb``, read back by
``gradebook_importer.rb``) or Moodle's offline grading worksheet (``mod/assign/feedback/offline``), changing only the
cells it fills; :func:`check` tries it before anything is graded. The feedback pages go back in one zip per class
(``grader/recording/handback.py``). Whose download a file is: ``grader/collecting/platforms.py``.
"""

from __future__ import annotations

import csv
import html
import re
import tempfile
from datetime import datetime
from functools import partial
from pathlib import Path

from grader.collecting import roster
from grader.recording.handback import feedback_zip
from grader.reporting.report import summary_line
from grader.safe_text import clean

CANVAS_ASSIGNMENT = re.compile(r"^(?P<title>.*?)\s*\((?P<id>\d+)\)\s*$")
CANVAS_TOTALS = re.compile(r"(Current|Final|Unposted|Override) (Score|Points|Grade|Status)")
CANVAS_RESERVED = {"Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section",
                   "Integration ID", "Root Account"}
MOODLE_COLUMNS = {"id": "identifier", "grade": "grade", "max": "maximum grade", "feedback": "feedback comments",
                  "modified": "last modified (grade)"}


def export(kind: str, platform_file: Path, rows: list[dict], assignment: str, out: Path,
           column: str | None = None, when: datetime | None = None) -> dict:
    """Write ``out/<kind>_import.csv``: the platform's export with the graded rows' scores (and, Moodle, their
    summaries and ``when`` they were graded, local time, by default now) filled in, nothing else changed; and
    ``out/<kind>_unmatched.txt``. Returns what was done."""
    fill = {"canvas": _canvas, "moodle": partial(_moodle_sheet, when=when or datetime.now())}.get(kind)
    if fill is None:
        raise ValueError(f"kind: expected 'canvas' or 'moodle', got {kind!r}")
    table = Table(Path(platform_file).read_bytes())
    graded = [r for r in rows if r.get("status", "graded") == "graded"]
    done = fill(table, [r for r in graded if r.get("platform") == kind], assignment, column)
    done["without_match"] += [r for r in graded if r.get("platform") != kind]
    out.mkdir(parents=True, exist_ok=True)
    done["import"], done["unmatched"] = out / f"{kind}_import.csv", out / f"{kind}_unmatched.txt"
    done["import"].write_bytes(table.dump())
    done["roster"] = roster.write(out, kind, done.pop("enrolled"), Path(platform_file).resolve())
    lines = [f"in the {kind} file, without a graded submission: {clean(who)}" for who in done["without_submission"]]
    lines += [f"graded, without a student in the {kind} file: {clean(r['student'])} ({clean(r.get('file', ''))})"
              for r in done["without_match"]]
    done["unmatched"].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return done


def again(out: Path, assignment: str, settings: dict | None, max_points: dict[str, float]) -> str:
    """After points given by hand: the platform's file and its feedback zip written again from ``grades.csv``,
    with the run's ``--export`` ``settings`` (``run.json``). Returns what was done, in a line."""
    if not settings:
        return "no platform file to fill again (the run had no --export)"
    platform_file = Path(settings["file"])
    if not platform_file.is_file():
        return (f"{platform_file} is gone: {settings['kind']}_import.csv still has the old points; run the "
                f"grader again with --only and --export to write it")
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        if row["status"] == "graded":
            row["summary"] = summary_line(row["score"], row, max_points)
    done = export(settings["kind"], platform_file, rows, assignment, out, settings.get("column"))
    bundle = feedback_zip(settings["kind"], out, rows)
    return f"{done['import'].name} and {bundle.name if bundle else 'the feedback zip'} written again"


def check(kind: str, platform_file: Path, assignment: str, column: str | None = None) -> None:
    """Raise ValueError now, before anything is graded, when :func:`export` could not fill ``platform_file``."""
    with tempfile.TemporaryDirectory() as tmp:
        export(kind, platform_file, [], assignment, Path(tmp), column)


def _canvas(table: Table, rows: list[dict], assignment: str, column: str | None) -> dict:
    header = table.values(0)
    col, id_at = _canvas_column(header, assignment, column), _index(header, "ID", "the Canvas gradebook export")
    by_id, possible = {str(r["platform_id"]): r for r in rows}, None
    done = {"kind": "canvas", "column": header[col], "filled": 0, "without_submission": [], "scaled": None,
            "enrolled": []}
    for i in range(1, len(table.records)):
        values = table.values(i)
        if "Points Possible" in values[0]:
            possible = _number(values[col] if col < len(values) else "")
        elif len(values) > max(col, id_at) and values[id_at].strip().isdigit():
            if values[col].strip() != "N/A" and values[0].strip() not in roster.CANVAS_TEST_STUDENT:
                done["enrolled"].append((values[id_at].strip(), values[0].strip()))
            row = by_id.pop(values[id_at].strip(), None)
            if row is None:
                done["without_submission"].append(f"{values[0]} (ID {values[id_at].strip()})")
                continue
            table.set(i, col, _points(row, possible, done))
            done["filled"] += 1
    done["without_match"] = list(by_id.values())
    return done


def _canvas_column(header: list[str], assignment: str, column: str | None) -> int:
    """The assignment's column: ``column`` (its header or Canvas's assignment id), else the one that names it."""
    assignments = [h for h in header if CANVAS_ASSIGNMENT.match(h) and not CANVAS_TOTALS.search(h)]
    if column is not None:
        named = [i for i, h in enumerate(header) if h not in CANVAS_RESERVED and (
            h == column or (m := CANVAS_ASSIGNMENT.match(h)) is not None and m["id"] == column.strip())]
        if len(named) != 1:
            raise ValueError(f"--column: expected one of the export's assignment columns {assignments}, got {column!r}")
        return named[0]
    words, number = _words(assignment)
    found = [h for h in assignments if assignment in h or words and words <= _words(h)[0]]
    if len(found) > 1 and number:
        found = [h for h in found if number in _words(h)[1]] or found
    if len(found) != 1:
        raise ValueError(f"--column: expected one assignment column of the Canvas export naming {assignment!r}, "
                         f"got {len(found)} ({found or 'none'}); name it with --column among {assignments}")
    return header.index(found[0])


def _words(text: str) -> tuple[set[str], set[str]]:
    """The words and the numbers (without leading zeros) of a name: ``04_queries_keys`` -> {queries, keys}, {4}."""
    tokens = re.findall(r"[a-z]+|\d+", text.lower())
    return {t for t in tokens if not t.isdigit()}, {str(int(t)) for t in tokens if t.isdigit()}


def _moodle_sheet(table: Table, rows: list[dict], assignment: str, column: str | None, when: datetime) -> dict:
    """Moodle's worksheet: the grade, the feedback (when the sheet has the column) and "Last modified (grade)", in
    the sheet's own format: Moodle's importer reads it with PHP's strtotime and skips a row whose stored grade is more
    than 60 s newer (``mod/assign/feedback/offline/locallib.php``), so the "-" Moodle writes for "never" (time 0)
    would make a re-import after a regrade do nothing."""
    header = [h.strip().lower() for h in table.values(0)]
    at = {k: _index(header, name, "Moodle's grading worksheet") for k, name in MOODLE_COLUMNS.items()
          if k != "feedback"}
    at["feedback"] = header.index(MOODLE_COLUMNS["feedback"]) if MOODLE_COLUMNS["feedback"] in header else None
    by_id = {str(r["platform_id"]): r for r in rows}
    done = {"kind": "moodle", "filled": 0, "without_submission": [], "scaled": None,
            "feedback": at["feedback"] is not None, "enrolled": []}
    name_at = header.index("full name") if "full name" in header else 1
    last = max(v for v in at.values() if v is not None)
    for i in range(1, len(table.records)):
        values = table.values(i)
        pid = re.search(r"(\d+)\s*$", values[at["id"]]) if len(values) > last else None
        if pid is None:
            continue
        done["enrolled"].append((pid[1], values[name_at].strip() if name_at < len(values) else ""))
        row = by_id.pop(pid[1], None)
        if row is None:
            done["without_submission"].append(f"{values[1] if len(values) > 1 else ''} ({values[at['id']]})")
            continue
        table.set(i, at["grade"], _points(row, _number(values[at["max"]]), done))
        table.set(i, at["modified"], moodle_time(when))
        if at["feedback"] is not None:
            table.set(i, at["feedback"], html.escape(clean(row.get("summary", ""))))
        done["filled"] += 1
    done["without_match"] = list(by_id.values())
    return done


def moodle_time(when: datetime) -> str:
    """``when`` as Moodle writes a date in its worksheet (``userdate`` with ``strftimedatetime``, the day and the
    hour without a leading zero): ``Monday, 3 June 2024, 9:05 AM``."""
    return f"{when:%A}, {when.day} {when:%B %Y}, {int(when.strftime('%I'))}:{when:%M %p}"


def _points(row: dict, possible: float | None, done: dict) -> str:
    """The row's score as the platform's number, scaled to the platform's maximum when that differs (and said)."""
    score, top = float(row["score"]), float(row["max_score"])
    if possible and top and abs(possible - top) > 1e-9:
        done["scaled"] = f"scores out of {top:g} were scaled to the platform's maximum of {possible:g}"
        score = score * possible / top
    return f"{score:.2f}".rstrip("0").rstrip(".")


def _number(text: str) -> float | None:
    try:
        return float(text.strip().replace(",", "."))
    except ValueError:
        return None


def _index(header: list[str], name: str, what: str) -> int:
    if name not in header:
        raise ValueError(f"platform_file: expected {what} with a column {name!r}, got the columns {header}")
    return header.index(name)


class Table:
    """A CSV file as its records of cells exactly as written (quotes included), so that writing it back changes
    only the cells set; UTF-8 with or without a BOM, comma, semicolon or tab as its first line uses."""

    def __init__(self, data: bytes):
        self.bom = data.startswith(b"\xef\xbb\xbf")
        text = data.decode("utf-8-sig")
        first = text.split("\n", 1)[0]
        self.delimiter = max(",;\t", key=lambda d: (first.count(d), d == ","))
        self.records = _records(text, self.delimiter)

    def values(self, i: int) -> list[str]:
        return [_unquote(cell) for cell in self.records[i][0]]

    def set(self, i: int, j: int, value: str) -> None:
        cells = self.records[i][0]
        quote = cells[j].startswith('"') or any(c in value for c in f'"\r\n{self.delimiter}') or value != value.strip()
        cells[j] = '"' + value.replace('"', '""') + '"' if quote else value

    def dump(self) -> bytes:
        text = "".join(self.delimiter.join(cells) + end for cells, end in self.records)
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode("utf-8")


def _records(text: str, delimiter: str) -> list[tuple[list[str], str]]:
    """(cells as written, the line end after them) for every record of ``text`` (RFC 4180, quotes may span lines)."""
    records, cells, start, i, quoted = [], [], 0, 0, False
    while i < len(text):
        ch = text[i]
        if quoted:
            quoted = ch != '"' or text[i + 1:i + 2] == '"'
            i += 2 if ch == '"' and quoted else 1
            continue
        if ch == '"':
            quoted = True
        elif ch == delimiter:
            cells.append(text[start:i])
            start = i + 1
        elif ch in "\r\n":
            end = "\r\n" if text.startswith("\r\n", i) else ch
            records.append(([*cells, text[start:i]], end))
            cells, i = [], i + len(end)
            start = i
            continue
        i += 1
    if start < len(text) or cells:
        records.append(([*cells, text[start:]], ""))
    return records


def _unquote(cell: str) -> str:
    return cell[1:-1].replace('""', '"') if len(cell) >= 2 and cell[0] == cell[-1] == '"' else cell
