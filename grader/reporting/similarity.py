"""Students whose code is unusually alike, for a person to read: never a verdict, never a score change.

A student's own code is what they wrote in the rebuilt notebook (``grader/collecting/collect.py``): every answer cell of
the release, and every code cell the release does not have (added cells). Every line that is a line of the release's
code (the template, the given signatures, the visible checks, the setup), comments and spaces aside, is taken out,
and the release's own fingerprints are copydetect's boilerplate, so what everyone was handed never counts.

The comparison is copydetect's (PyPI ``copydetect``): pygments tokens with every name replaced by one letter,
comments and whitespace dropped, every k-gram of the result fingerprinted (winnowing, Schleimer, Wilkerson and
Aiken, SIGMOD 2003, with copydetect's default window of 1). Renamed variables and reordered functions or lines keep
their fingerprints; a solution rewritten in other steps does not. copydetect was chosen over ``pycode_similar``
(1.4, 2020), which needs ``ast.parse`` to succeed (an IPython line or a syntax error loses the whole submission),
compares functions only (exercise 1 of chapter 4 is not one) and one reference against the others, with no
boilerplate; copydetect tokenizes any text, takes the template as boilerplate, says where matches are (the page,
``grader/reporting/similarity_page.py``, marks them), and reads from a stream (``fp=``), so nothing is written to disk.

What is listed (:func:`compare`): students whose code matches the published solution (``solutions/``), apart, for
that is worth a word but is not a pair, so that between students the solution's fingerprints count no more than
the template's; students who handed in the same code (the same fingerprints), as one entry, a group; and pairs. A
score is copydetect's similarity (the share of one's code that the other has) averaged over the two, so that a
short answer all inside a longer one is not a full match. Entries come by ``rarity`` (:func:`_rarity`): the share
of their code that they have in common and few others have, a passage counting 1/(1 + n) when n other students have
it too. The moss script's ``-m`` option rests on the same ground: code that many programs contain was most likely
shared legitimately (a common answer).

Bounded for a class: each student is fingerprinted once, on at most ``limits.MAX_CODE_CHARS`` characters (answer
cells first), one code handed in by several is compared once, and a comparison costs a set intersection and an OR
of the positions the shared fingerprints cover, kept as the bits of an int (``_Print``): the same number as
copydetect's ``compare_files`` (a test keeps them equal), which itself gives the spans the page marks.
"""

from __future__ import annotations

import copy
import io
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from grader import limits
from grader.reporting.similarity_page import page, shown
from layout import nbmeta

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
    """An entry: the students who handed in one code (``a``, several when they handed in the same) and those of
    another (``b``), or a group of one code (``b`` empty, ``score`` 1); ``score`` and ``rarity`` in [0, 1]."""

    a: tuple[str, ...]
    b: tuple[str, ...]
    score: float
    rarity: float


@dataclass
class Found:
    """What :func:`compare` found: ``pairs`` (pairs and groups, rarest first), ``solution`` (the students of each
    code that matches the published solution, with its score, highest first; None when there is none to compare
    with), each compared student's ``codes`` and ``prints``, and the students ``skipped``, with no code."""

    pairs: list[Pair]
    solution: list[tuple[tuple[str, ...], float]] | None
    codes: dict[str, str]
    prints: dict
    skipped: list[str]


def report(release, notebooks: dict, out: Path, solution: Path | None = None, threshold: float = THRESHOLD
           ) -> Found:
    """:func:`compare` (``solution``: the assignment's notebook in ``solutions/``), written as the page ``out``."""
    found = compare(release, notebooks, solution, threshold)
    spans = [_matched_spans(found, p) for p in found.pairs[:limits.MAX_SHOWN]]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(found, spans, threshold, len(notebooks), NOISE), encoding="utf-8")
    return found


def compare(release, notebooks: dict, solution: Path | None = None, threshold: float = THRESHOLD) -> Found:
    """The students of ``notebooks`` (student -> rebuilt notebook) whose code matches the notebook ``solution``
    with a score of at least ``threshold``, and the pairs and groups whose code outside it scores as much. One
    student's code never makes it raise: code that cannot be read counts as none."""
    template = _fingerprint(_release_code(release), window=1)
    boilerplate = sorted(template.hash_idx) if template else []
    codes, prints, skipped, same = {}, {}, [], defaultdict(list)
    for student in sorted(notebooks):
        code = _safe_code(release, notebooks[student])
        fingerprint = _fingerprint(code, boilerplate=boilerplate) if code.strip() else None
        if fingerprint is None or not fingerprint.hash_idx:
            skipped.append(student)
        else:
            codes[student], prints[student] = code, _Print(fingerprint)
            same[frozenset(prints[student].covers)].append(student)
    groups = [tuple(students) for students in same.values()]  # the students of each code, one or more
    whole = {g: prints[g[0]] for g in groups}
    published = _published(release, solution, boilerplate)
    if published is None:
        return Found(_entries(whole, whole, threshold), None, codes, prints, skipped)
    matched = [(g, score) for g in groups if (score := _score(whole[g], published)) >= threshold]
    own = {g: _Print(whole[g].fingerprint, leave=published.covers) for g in groups}
    return Found(_entries(own, whole, threshold), sorted(matched, key=lambda m: (-m[1], m[0])), codes, prints,
                 skipped)


def _entries(own: dict, whole: dict, threshold: float) -> list[Pair]:
    """The groups of several students (``own``: each code's fingerprints outside the solution, by its students;
    ``whole``: all of them), and the pairs whose code outside the solution scores at least ``threshold``, rarest
    first."""
    held = Counter()  # fingerprint -> the students who have it
    for g, mine in own.items():
        held.update(dict.fromkeys(mine.covers, len(g)))
    live = [g for g, mine in own.items() if mine.coverage]
    scored = [(g, g, 1.0) for g in live if len(g) > 1]
    scored += [(a, b, score) for i, a in enumerate(live) for b in live[i + 1:]
               if (score := _score(own[a], own[b])) >= threshold]
    pairs = [Pair(a, () if a == b else b, score,
                  _rarity((own[a], own[b]), (whole[a], whole[b]), held, len(set(a + b)))) for a, b, score in scored]
    return sorted(pairs, key=lambda p: (-p.rarity, -p.score, p.a, p.b))


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


def _published(release, solution: Path | None, boilerplate) -> _Print | None:
    """The answer cells of the notebook ``solution`` as a student who handed them in, fingerprinted, or None."""
    if solution is None:
        return None
    import nbformat

    answers = nbmeta.solution_sources(nbformat.read(solution, as_version=4))
    fingerprint = _fingerprint(_safe_code(release, nbmeta.with_answers(copy.deepcopy(release), answers)),
                               boilerplate=boilerplate)
    return _Print(fingerprint) if fingerprint is not None and fingerprint.hash_idx else None


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
    """A student's fingerprints but those in ``leave``, with what each covers of the normalised code as the bits
    of an int, so that a score is two ORs and two bit counts: the same number as ``compare_files`` (the
    positions its matched k-grams cover, over the positions all its k-grams cover), without its numpy arrays."""

    def __init__(self, fingerprint, leave=()):
        self.fingerprint, self.covers, run, every = fingerprint, {}, (1 << fingerprint.k) - 1, 0
        for hash_value, starts in fingerprint.hash_idx.items():
            bits = 0
            for start in starts:
                bits |= run << int(start)
            if int(hash_value) not in leave:
                self.covers[int(hash_value)] = bits
                every |= bits
        self.coverage = every.bit_count()


def _score(a: _Print, b: _Print) -> float:
    """copydetect's similarity of the two averaged: the share of each one's code that the other has."""
    common = a.covers.keys() & b.covers.keys()
    return sum(_covered(mine, common) / mine.coverage for mine in (a, b)) / 2 if common else 0.0


def _covered(mine: _Print, hashes) -> int:
    bits = 0
    for hash_value in hashes:
        bits |= mine.covers[hash_value]
    return bits.bit_count()


def _rarity(own: tuple[_Print, _Print], whole: tuple[_Print, _Print], held: Counter, members: int) -> float:
    """The share of each side's code (``whole``) that the two have in common outside the solution (``own``),
    each position counted 1/(1 + n), n the students outside the entry who have its rarest fingerprint; averaged."""
    by_others = defaultdict(list)
    for hash_value in own[0].covers.keys() & own[1].covers.keys():
        by_others[held[hash_value] - members].append(hash_value)
    shares = []
    for mine, total in zip(own, whole, strict=True):
        bits, counted, weighted = 0, 0, 0.0
        for others in sorted(by_others):  # the rarest first: a position counts once, as its rarest fingerprint
            for hash_value in by_others[others]:
                bits |= mine.covers[hash_value]
            weighted, counted = weighted + (bits.bit_count() - counted) / (1 + others), bits.bit_count()
        shares.append(weighted / total.coverage)
    return min(1.0, sum(shares) / 2)


def _matched_spans(found: Found, p: Pair) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """Where the two students the page shows of ``p`` match in their code, from copydetect's ``compare_files``."""
    from copydetect import compare_files

    a, b = shown(p)
    try:
        _, _, (slices_a, slices_b) = compare_files(found.prints[a].fingerprint, found.prints[b].fingerprint)
        return _spans(slices_a, len(found.codes[a])), _spans(slices_b, len(found.codes[b]))
    except Exception:  # noqa: BLE001 - the entry is listed all the same, its code shown unmarked
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

