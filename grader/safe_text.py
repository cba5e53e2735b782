"""Text that came from a submission (a file's name, a student id, an error), made safe to show.

Every step that prints such text or writes it into a spreadsheet passes it through :func:`clean` first.
"""

from __future__ import annotations

from grader import limits


def clean(text: str, limit: int = limits.CELL_TEXT_CHARS) -> str:
    """Text that came from a submission, safe for a terminal and a spreadsheet: no control characters
    (so no terminal escapes), and no leading ``= + - @`` that a spreadsheet would run as a formula. Past ``limit``
    characters it ends at the last whole word that fits, with "…"."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))
    if len(text) > limit:
        cut = text[:limit - 1]
        text = (cut[:cut.rindex(" ")] if " " in cut[limit // 2:] else cut).rstrip(" ;,:") + "…"
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
