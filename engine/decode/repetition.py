"""Runaway-gen detection: a gen whose tail is one unit of tokens repeated over and over.

Small models that drift out of the edit grammar's intent tend to loop inside a gen (one line, or a
few tokens, repeated until the budget). Such a program is never a useful edit, so the decoder stops
it as soon as the loop is unmistakable and reports it as truncated (never applied) instead of
spending the whole budget on it.

"Unmistakable" is deliberately conservative, so that legitimate repetitive code (a table of zeros,
a run of similar assignments) is not cut: the tail must be an exact repetition of a unit of
1..``MAX_UNIT`` tokens, at least ``MIN_REPEATS`` times, covering at least ``MIN_SPAN`` tokens.
"""
from __future__ import annotations

MAX_UNIT = 64
MIN_REPEATS = 8
MIN_SPAN = 96


def repeating_unit(ids: list[int], *, max_unit: int = MAX_UNIT, min_repeats: int = MIN_REPEATS,
                   min_span: int = MIN_SPAN) -> int | None:
    """The length of the unit that ``ids`` ends by repeating (see module doc), or None."""
    n = len(ids)
    for unit in range(1, max_unit + 1):
        need = max(unit * min_repeats, min_span)
        if need > n:
            continue
        tail = ids[n - need:]
        if all(tail[i] == tail[i - unit] for i in range(unit, need)):
            return unit
    return None
