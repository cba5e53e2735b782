"""The kernel's replies, read on the grader's side as hostile plain data.

A reply lies in a folder the kernel wrote (``out/<grade id>/<case>/``): ``reply.json`` holds
``{"ok": <plain tree>}`` or ``{"error": "<type>: <message>"}``, and ``"ran"``, the forbidden
callables the kernel says it saw run (a list of names), and ``"off"``, what of its recorder it found switched
off (words of ``forbidden_calls.OFF``). It is read without following links or
waiting on pipes, within ``grader.limits.REPLY_BUDGET`` (the trusted side's own: never a size the kernel
was told or wrote), and only as plain data.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from grader import limits
from grader.kernel_side import plain
from grader.kernel_side.forbidden_calls import OFF


class Reply(NamedTuple):
    kind: str       # ok, error, missing, malformed
    value: object   # the value (ok), the error's text (error), or why (missing, malformed)
    ran: tuple = ()  # names the kernel reported as run (only names the grader asked about)
    off: tuple = ()  # what of its recorder the kernel reported switched off (only the words of ``OFF``)


def read_reply(root: Path, rel: str = ".", watched: tuple = ()) -> Reply:
    """The reply in ``root/rel`` (``root`` is trusted, ``rel`` and everything below it are not).

    ``watched``: the names the grader asked the kernel to watch for; other names it reports are dropped.
    """
    folder = (str(root), rel)
    try:
        tree = plain.read_json(root, f"{rel}/reply.json", limits.REPLY_BUDGET["json_bytes"])
    except FileNotFoundError:
        return Reply("missing", "no reply")
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - anything unreadable is malformed
        return Reply("malformed", f"unreadable reply ({type(exc).__name__})")
    if not isinstance(tree, dict):
        return Reply("malformed", "a reply that is neither a value nor an error")
    ran, off = tree.get("ran", []), tree.get("off", [])
    ran = tuple(n for n in watched if isinstance(ran, list) and n in ran[:limits.MAX_REPLY_NAMES])
    off = tuple(w for w in OFF if isinstance(off, list) and w in off[:len(OFF)])
    keys = set(tree) - {"ran", "off"}
    try:
        if keys == {"error"}:
            return Reply("error", str(tree["error"])[:limits.MAX_REPLY_ERROR_CHARS], ran, off)
        if keys == {"ok"}:
            budget = plain.Budget(**limits.REPLY_BUDGET)  # the grader's own, whatever the kernel was told
            return Reply("ok", plain.decode(tree["ok"], folder, tensors=True, budget=budget), ran, off)
        return Reply("malformed", "a reply that is neither a value nor an error", ran, off)
    except (Exception, RecursionError) as exc:  # noqa: BLE001
        return Reply("malformed", f"a reply that is not plain data within its budget ({type(exc).__name__})", ran,
                     off)
