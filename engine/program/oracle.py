"""Oracle edit programs: the best program for a known (document, gold) pair, no model involved.

* :func:`line_program` — ``difflib.SequenceMatcher(autojunk=False)`` over lines
  (``text.split("\\n")``); matching blocks become ``CopyLines``, every other gold run becomes a
  ``Gen`` padded with one leading and one trailing "\\n" (the resolver strips exactly those, so
  blank lines survive). Deleted document lines emit nothing. Lossless by construction:
  ``resolve(line_program(d, g), d).text == g`` for every pair of strings.
* :func:`token_program` — greedy left-to-right longest-match cover of the gold token ids by
  document token ids with minimum span ``min_span``; covered runs become ``CopyTokens``
  (0-based inclusive document indices), uncovered runs a ``Gen`` with the decoded gold text.
  Spans are only cut where decoding is *stable* (decoding the two sides separately gives the
  same text as decoding them together), so byte-level tokens that split a multi-byte
  character never end up on different sides of a cut.
* :func:`token_cover` — just the greedy cover (spans), used by the ceiling benchmark.
"""
from __future__ import annotations

import difflib
from typing import Callable, Sequence

import numpy as np

from engine.program.grammar import CopyLines, CopyTokens, Gen, Op

__all__ = ["line_program", "token_program", "token_cover", "longest_matches", "Span"]

Span = tuple[int, int, int]  # (gold_start, doc_start, length)


def line_program(document: str, gold: str) -> tuple[Op, ...]:
    """The line-level oracle program turning ``document`` into ``gold`` (byte-exact)."""
    doc_lines = document.split("\n")
    gold_lines = gold.split("\n")
    matcher = difflib.SequenceMatcher(None, doc_lines, gold_lines, autojunk=False)
    ops: list[Op] = []
    g = 0
    for a, b, size in matcher.get_matching_blocks():
        if b > g:
            ops.append(Gen("\n" + "\n".join(gold_lines[g:b]) + "\n"))
        if size:
            ops.append(CopyLines(a + 1, a + size))
        g = b + size
    if g < len(gold_lines):  # unreachable: the final matching block is (len_a, len_b, 0)
        ops.append(Gen("\n" + "\n".join(gold_lines[g:]) + "\n"))
    return tuple(ops)


def longest_matches(doc_ids: Sequence[int], gold_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """For each gold position p: the length of the longest run ``gold[p:p+L] == doc[a:a+L]``
    and the first document start ``a`` achieving it (``-1`` when L == 0)."""
    d = np.asarray(doc_ids, dtype=np.int64)
    g = np.asarray(gold_ids, dtype=np.int64)
    n_d, n_g = len(d), len(g)
    best_len = np.zeros(n_g, dtype=np.int64)
    best_at = np.full(n_g, -1, dtype=np.int64)
    nxt = np.zeros(n_d + 1, dtype=np.int64)  # run lengths for gold row p+1, indexed by doc start
    for p in range(n_g - 1, -1, -1):
        cur = np.zeros(n_d + 1, dtype=np.int64)
        eq = d == g[p]
        cur[:n_d] = np.where(eq, nxt[1:] + 1, 0)
        if n_d:
            a = int(np.argmax(cur[:n_d]))
            if cur[a] > 0:
                best_len[p], best_at[p] = cur[a], a
        nxt = cur
    return best_len, best_at


def token_cover(doc_ids: Sequence[int], gold_ids: Sequence[int], min_span: int = 8,
                stable: Callable[[int], bool] | None = None, matches=None) -> list[Span]:
    """Greedy left-to-right longest-match cover: spans ``(gold_start, doc_start, length)`` with
    ``length >= min_span``. ``stable(p)`` (optional) says whether gold position p may be cut;
    spans are shrunk from the right to a stable end and skipped if their start is unstable."""
    if min_span < 1:
        raise ValueError(f"min_span must be >= 1, got {min_span}")
    best_len, best_at = matches if matches is not None else longest_matches(doc_ids, gold_ids)
    spans: list[Span] = []
    p, n = 0, len(gold_ids)
    while p < n:
        length = int(best_len[p])
        if length >= min_span and (stable is None or stable(p)):
            end = p + length
            if stable is not None:
                while end - p >= min_span and not stable(end):
                    end -= 1
            if end - p >= min_span:
                spans.append((p, int(best_at[p]), end - p))
                p = end
                continue
        p += 1
    return spans


def token_program(doc_ids: Sequence[int], gold_ids: Sequence[int],
                  decode: Callable[[Sequence[int]], str], min_span: int = 8) -> tuple[Op, ...]:
    """The token-level oracle program: ``CopyTokens`` for the greedy cover, ``Gen`` for the rest.

    Resolving it (token mode, ``token_ids=doc_ids``, ``decode_tokens=decode``) gives
    ``decode(gold_ids)`` whenever ``decode`` is a byte-level decoder; callers that need
    byte-exactness against the gold *text* must also check that the tokenizer round-trips it.
    """
    gold_ids = list(gold_ids)
    full = decode(gold_ids)
    cache: dict[int, bool] = {0: True, len(gold_ids): True}

    def stable(p: int) -> bool:
        if p not in cache:
            cache[p] = decode(gold_ids[:p]) + decode(gold_ids[p:]) == full
        return cache[p]

    spans = token_cover(doc_ids, gold_ids, min_span, stable)
    ops: list[Op] = []
    g = 0
    for gs, ds, length in spans:
        if gs > g:
            ops.append(Gen(decode(gold_ids[g:gs])))
        ops.append(CopyTokens(ds, ds + length - 1))
        g = gs + length
    if g < len(gold_ids):
        ops.append(Gen(decode(gold_ids[g:])))
    return tuple(ops)
