"""A submission's id (its ``student``): the name of its rows, its feedback page and its saved result in a run.

A row's id is its own name (the file's, or the platform's ``<name>_<id>``) when that is plain ASCII (letters,
digits, ``-``, ``_``, at most ``MAX_ID_CHARS``); else that name reduced to plain ASCII, every letter of another
script transliterated (the instructor types these ids into ``--only`` and ``grader.manual``). A reduced name, or one
another row came first with, takes the first free suffix ``_2``, ``_3``, ... that is nobody's own name, whatever
the order, and its row says so (for ``grader/collecting/collect.py``).
"""

from __future__ import annotations

import re
import unicodedata

from anyascii import anyascii

from grader import limits
from grader.collecting.platforms import Found

SAFE_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{limits.MAX_ID_CHARS}}}")  # every id this module makes
STATUS_ORDER = {"graded": 0, "superseded": 1, "not read": 2}  # who has the first claim on a contested id


def name_rows(rows: list[tuple]) -> None:
    """Every row's id: its own name when plain, else (or when another row came first with it) its reduced name with
    the first free suffix that is nobody's own name. Graded rows have the first claim, then by path. ``rows``:
    (``collect.Submission``, ``platforms.Found``) pairs; each submission's ``student`` is set, and noted when it is
    not its own name."""
    rows = sorted(rows, key=lambda pair: (STATUS_ORDER[pair[0].status], pair[0].source))
    owner: dict[str, tuple] = {}
    for sub, found in rows:
        if reduce_name(found.own) == found.own:
            owner.setdefault(found.own, (sub, found))
    taken: dict[str, tuple] = {}
    for sub, found in rows:
        base = reduce_name(found.own)
        sid, n = base, 2
        while sid in taken or sid in owner and owner[sid][0] is not sub:
            sid, n = f"{base[:limits.MAX_ID_CHARS - 8]}_{n}", n + 1
        holder = taken.get(base) or owner.get(base)
        taken[sid], sub.student = (sub, found), sid
        _explain(sub, found, holder)


def _explain(sub, found: Found, holder: tuple | None) -> None:
    """The note of a row whose id is not its own name: not plain (a file's name only), or taken by someone else."""
    same_person = holder is not None and found.platform != "folder" and \
        (holder[1].platform, holder[1].platform_id) == (found.platform, found.platform_id)
    why = []
    if found.platform == "folder" and reduce_name(found.own) != found.own:
        why.append("is not a plain name")
    if sub.student != reduce_name(found.own) and holder is not None and not same_person:
        why.append(f"collides with {holder[0].file_name}")
    if why:
        sub.note(f"named {sub.student}: its file name {sub.file_name} {' and '.join(why)}")


def reduce_name(name: str) -> str:
    """``José Ñ!`` -> ``Jose_N``: ASCII letters, digits, ``-`` and ``_`` only, at most ``MAX_ID_CHARS`` characters."""
    reduced = re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_name(name)).strip("_-")
    return reduced[:limits.MAX_ID_CHARS].strip("_-") or "student"


def ascii_name(text: str) -> str:
    """``José Ñ`` -> ``Jose N``, ``Bjørn Þórsson`` -> ``Bjorn Thorsson``, ``Straße`` -> ``Strasse``, ``张伟`` ->
    ``ZhangWei``: every letter transliterated (``anyascii``'s tables, the same in every run), never dropped."""
    return anyascii(unicodedata.normalize("NFC", text))
