"""A grading run's progress (grader/progress.py) and its closing summary (grader/reporting/report.py): a live bar on a
terminal, occasional plain lines in a log, nothing with --quiet, and a summary of a screen however large the class."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

import pytest

from grader import limits, progress
from grader.progress import Progress
from grader.reporting import report
from grader.safe_text import clean


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """time.perf_counter for the progress module, moved by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", c)
    return c


def test_a_terminal_gets_a_bar_with_count_rate_and_time_left(clock):
    out = Terminal()
    p = Progress(stream=out)
    p.start(4)
    for i in range(4):
        clock.now += 2.0
        p.advance("! bob (3): test cell ex2 was edited" if i == 1 else "")
    p.close()
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.getvalue())  # without the terminal's colours
    assert "1/4" in text and "4/4" in text
    assert "2.00 s/submission" in text
    assert "left 0:06" in text  # after the first: 2 s each, 3 to go
    assert text.count("! bob (3): test cell ex2 was edited") == 1


def test_a_log_gets_plain_lines_every_half_minute_and_at_the_end(clock):
    out = io.StringIO()
    p = Progress(stream=out)
    p.start(10)
    for i in range(10):
        clock.now += 10.0
        p.advance("! carol (0): could not be read: not a notebook" if i == 4 else "")
    lines = out.getvalue().splitlines()
    assert lines == ["3/10 graded, 0:30 elapsed, 10.00 s/submission, about 1:10 left",
                     "! carol (0): could not be read: not a notebook",
                     "6/10 graded, 1:00 elapsed, 10.00 s/submission, about 0:40 left",
                     "9/10 graded, 1:30 elapsed, 10.00 s/submission, about 0:10 left",
                     "10/10 graded, 1:40 elapsed, 10.00 s/submission, about 0:00 left"]
    assert "\x1b" not in out.getvalue()


def test_quiet_prints_nothing(clock):
    for stream in (Terminal(), io.StringIO()):
        p = Progress(quiet=True, stream=stream)
        p.start(3)
        for _ in range(3):
            clock.now += 1
            p.advance("! dave: a problem")
        p.close()
        assert stream.getvalue() == ""


def test_the_estimate_error_is_measured_against_the_true_end(clock):
    """Three quick submissions, then a slow one: at half-way the estimate (the mean rate) is too short."""
    p = Progress(stream=io.StringIO(), quiet=True)
    p.start(4)
    for step in (1.0, 1.0, 1.0, 7.0):
        clock.now += step
        p.advance()
    errors = p.estimate_errors()
    # after 1 of 4 (1 s): 3 s estimated, 9 s really left; after 2 (2 s): 2 s for 8; after 3 (3 s): 1 s for 7
    assert errors == pytest.approx({"25%": (3 - 9) / 9, "50%": (2 - 8) / 8, "75%": (1 - 7) / 7})


def rows(n: int, attention_every: int = 0) -> list[dict]:
    table = []
    for i in range(n):
        bad = attention_every and i % attention_every == 0
        table.append({"student": f"s{i:03d}", "score": float(i % 11), "max_score": 10.0, "ex1": float(i % 2),
                      "ex2": float(i % 11 == 10) * 9, "status": "graded", "problems": "a problem" if bad else "",
                      "flags": "", "sandbox": ""})
    return table


def test_the_closing_summary_fits_a_screen_for_a_class_of_300(capsys, tmp_path):
    run_info = {"assignment": "04_x", "seed": 1, "seed_from": "fresh", "limits": "limits: ..."}
    quiet = Progress(quiet=True)
    similar = SimpleNamespace(pairs=[], solution=[(("s001", "s002"), 1.0)])  # what similarity.report found
    report.closing(tmp_path, rows(300, attention_every=3), {"ex1": 1.0, "ex2": 9.0}, run_info, quiet, True, similar,
                   None, False)
    text = capsys.readouterr().out
    assert "no pair of submissions is unusually alike; 2 submission(s) match the published solution" in text
    assert len(text.splitlines()) <= 40, text
    assert "100 of 300 submission(s) need your attention" in text
    assert f"... and {100 - limits.ATTENTION_SHOWN} more: see grades.csv" in text
    assert "s000: a problem" in text and "s297: a problem" not in text


def test_the_distribution_counts_every_score_once():
    table = rows(300)
    spans = report.distribution(table, 10.0)
    assert sum(n for _, n in spans) == 300
    # scores i % 11: 0..10 each about 27 times; 0-2 holds 0 and 1, the last span holds 8, 9 and 10
    by_hand = {span: sum(1 for r in table if lo <= r["score"] < hi or (hi == 10 and r["score"] == 10))
               for span, (lo, hi) in zip([s for s, _ in spans], [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)])}
    assert dict(spans) == by_hand


def test_superseded_rows_are_listed_but_not_counted():
    table = rows(4)
    table[0]["status"], table[0]["score"] = "superseded", ""
    assert report.pass_rates(table, {"ex1": 1.0, "ex2": 9.0})["ex1"] == pytest.approx(2 / 3)
    assert sum(n for _, n in report.distribution(table, 10.0)) == 3


def test_a_long_line_ends_at_a_whole_word():
    """Lines were cut mid-word at the terminal's width ("ran longer than 60 s (or th")."""
    words = "ex1_answer ran longer than 60 s (or than the time left) and was stopped; " * 4
    line = clean(words, limits.LINE_CHARS)
    assert len(line) <= limits.LINE_CHARS and line.endswith("…")
    assert words.startswith(line[:-1]) and words[len(line) - 1] == " "  # the next character begins a new word
    assert clean("y" * 300, 50) == "y" * 49 + "…"  # one word longer than the line is cut where it must be
    assert clean("=cmd|' /C calc'!A0", 160) == "'=cmd|' /C calc'!A0"
