"""Speculative op headers: guess the next op(s) so one forward can verify a whole copy header.

Owns the guessing heuristics only (pure functions of the program so far and the document). The
decoder turns a guess into tokens on a clone of the FSM, feeds them with the pending ids in ONE
forward, and keeps the longest prefix that equals the model's own greedy masked choices, so a
wrong guess costs nothing in correctness (the output is identical with or without guesses).

Guesses (line mode; token mode is analogous with token indices):

* before the first op: copy from the start to the end, then ``</program>``;
* after a copy that ends before the last line: open a gen (``GEN_OPEN_GUESS``);
* after a copy that reaches the last line: ``</program>``;
* after a gen: copy from the line after the previous copy's end plus the gen's line count (the
  gen usually replaces as many lines as it writes), clamped into the document, to the end, then
  ``</program>``. If the gen's last line equals a later document line, resume after that line.
"""
from __future__ import annotations

from engine.program.grammar import CopyLines, CopyTokens, Gen
from engine.program.resolver import strip_gen

GEN_OPEN_GUESS = "gen_open"
CLOSE_GUESS = "close"


def _last_copy_end(ops, kind) -> int | None:
    for op in reversed(ops):
        if isinstance(op, kind):
            return op.end
    return None


def guess_next_ops(ops, n_lines: int, n_tokens: int, lines: list[str], *, token_level: bool,
                   gen_token_count=None) -> list:
    """The guessed continuation: a list of ops, ``GEN_OPEN_GUESS`` or ``CLOSE_GUESS`` items."""
    kind = CopyTokens if token_level else CopyLines
    first, last = (0, n_tokens - 1) if token_level else (1, n_lines)
    if last < first:
        return [CLOSE_GUESS] if ops else []
    if not ops:
        return [kind(first, last), CLOSE_GUESS]
    prev = ops[-1]
    if isinstance(prev, (CopyLines, CopyTokens)):
        return [CLOSE_GUESS] if prev.end >= last else [GEN_OPEN_GUESS]
    if not isinstance(prev, Gen):
        return []
    end = _last_copy_end(ops, kind)
    end = first - 1 if end is None else end
    if token_level:
        width = gen_token_count(prev.text) if gen_token_count else 0
        start = end + 1 + width
    else:
        body = strip_gen(prev.text)
        gen_lines = body.split("\n") if body else []
        start = end + 1 + len(gen_lines)
        if gen_lines and gen_lines[-1].strip():
            for k in range(end + 1, n_lines + 1):
                if lines[k - 1] == gen_lines[-1]:
                    start = k + 1
                    break
    start = max(first, min(start, last))
    return [kind(start, last), CLOSE_GUESS]
