"""Answer one grade cell's hidden questions (kernel side): run each probe, write each reply.

The grader wrote every question as plain data in ``<box>/in/<grade id>/<case>/request.json``; the
reply goes to ``<box>/out/<grade id>/<case>/reply.json`` (with its arrays beside it). While a probe
calls the student's code, the forbidden callables the grader named are watched for
(``forbidden_calls``); what ran is reported in the reply's ``"ran"``, as the kernel saw it, and what of the
recorder was found switched off or replaced in its ``"off"``.

Its sizes are the grader's (``grader/limits.py``), written into the code that calls :func:`answer`
(``grader/running/run.py``): this folder never imports the grader. The grader reads every reply under its own
budget, whatever these say.
"""

from __future__ import annotations

import json
import os

from . import plain, probes


def answer(user: dict, box: str, gid: str, n: int, watch: dict, sizes: dict) -> None:
    """Reply to the ``n`` questions of grade cell ``gid`` with the student's namespace ``user``; ``watch``: the
    forbidden names the grader named -> the dotted names of their routes, as the grader derived them.

    ``sizes``: ``request`` (the :class:`plain.Budget` a question is read under), ``reply_items`` (the values a
    reply may hold: the grader's reader refuses more) and ``error_chars`` (of an error's message kept).
    """
    for i in range(n):
        where = os.path.join(box, "in", gid, str(i))
        there = os.path.join(box, "out", gid, str(i))
        os.makedirs(there, exist_ok=True)
        ran: list = []
        off: list = []
        try:
            budget = plain.Budget(**sizes["request"])
            req = plain.decode(plain.read_json(where, "request.json", budget.json_bytes), where, True, budget)
            fn = probes.resolve(req["probe"])
            seen: list = []
            try:
                with _watching(watch) as seen:
                    value = fn(user, **req["inputs"])
            finally:  # after the recorder's own checks, which it makes as the block ends
                ran, off = list(seen), list(getattr(seen, "off", []))
            reply = {"ok": plain.encode(value, there, sizes["reply_items"])}
        except Exception as exc:  # noqa: BLE001 - the student's error is the reply
            text = str(exc).splitlines()[0][:sizes["error_chars"]] if str(exc) else ""
            reply = {"error": type(exc).__name__ + (": " + text if text else "")}
        reply["ran"] = sorted(set(map(str, ran)))
        reply["off"] = sorted(set(map(str, off)))
        with open(os.path.join(there, "reply.json"), "w") as f:
            json.dump(reply, f, allow_nan=True)


def _watching(watch):
    """The forbidden-call recorder (a context that gives the list of what ran); nothing watched, nothing recorded."""
    import contextlib

    if not watch:
        return contextlib.nullcontext([])
    from . import forbidden_calls

    return forbidden_calls.recording(list(watch), dict(watch))
