"""Probes of assignment 13, looking inside (kernel side: standard library and torch only)."""

from __future__ import annotations


def sweep(user, table, drift, clean, corrupted, n_layers, n_heads, limit):
    """The student's ``restored_fractions`` with a ``patched_metric(layer, head)`` that answers ``table[layer, head]``
    the first time a head is asked and adds ``drift[layer, head]`` at every later call of the same head; the result
    and every ``[layer, head]`` asked, in order."""
    asked = []
    seen = {}

    def patched_metric(layer, head):
        key = (int(layer), int(head))
        if not (0 <= key[0] < n_layers and 0 <= key[1] < n_heads):
            raise IndexError(f"patched_metric: expected a layer in 0 .. {n_layers - 1} and a head in "
                             f"0 .. {n_heads - 1}")
        if len(asked) >= limit:
            raise RuntimeError(f"patched_metric was called more than {limit} times: call it once per head")
        asked.append(list(key))
        earlier = seen.get(key, 0)
        seen[key] = earlier + 1
        return table[key] + earlier * drift[key]

    out = user["restored_fractions"](patched_metric, clean.clone(), corrupted.clone(), n_layers, n_heads)
    return {"out": out, "calls": asked}
