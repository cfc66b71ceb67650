"""The grammar of the NEXT op of an edit program, as GBNF (llama.cpp ``grammar``, vLLM ``structured_outputs.grammar``).

One request of prompt-level Copy-as-Decode writes exactly one op header, so its grammar is::

    root  ::= copy | gen | close
    copy  ::= "<copy lines=\\"" start "-" end "\\"/>"      line indices bounded by the document
    gen   ::= "<gen>"                                      (the body is the next request, unconstrained)
    close ::= "</program>"                                 (not before the first op)

Indices are decimal numbers without leading zeros in ``[lo, hi]`` (``int_range``), exactly the
numbers the in-process FSM (``engine.guide.fsm``) allows. ``end >= start`` cannot be said in a
context-free grammar of this size, so ``op_grammar`` bounds both by the document and
``end_grammar(start, n)`` constrains the end alone (the follow-up request when a model writes an
end before its start; greedy choices agree with the in-process FSM whenever the first answer
already satisfies ``end >= start``, see ``engine.remote.cad``). Token copies (``cad-tokens``) use
``<copy tokens="a-b"/>`` with ``0 <= a <= b < n_tokens``.
"""
from __future__ import annotations

from engine.program.grammar import (
    COPY_CLOSE, COPY_LINES_OPEN, COPY_TOKENS_OPEN, GEN_OPEN, PROGRAM_CLOSE, RANGE_SEP,
)


def _lit(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _same_length(a: str, b: str) -> list[str]:
    """GBNF sequences for the numbers between a and b (equal lengths, a <= b), as strings."""
    if len(a) == 1:
        return [f"[{a}-{b}]" if a != b else _lit(a)]
    if a[0] == b[0]:
        return [f"{_lit(a[0])} {rest}" for rest in _same_length(a[1:], b[1:])]
    n = len(a) - 1
    if set(a[1:]) == {"0"} and set(b[1:]) == {"9"}:
        return [f"[{a[0]}-{b[0]}]" + " [0-9]" * n]
    out = [f"{_lit(a[0])} {rest}" for rest in _same_length(a[1:], "9" * n)]
    lo, hi = int(a[0]) + 1, int(b[0]) - 1
    if lo <= hi:
        out.append((f"[{lo}-{hi}]" if lo != hi else _lit(str(lo))) + " [0-9]" * n)
    out += [f"{_lit(b[0])} {rest}" for rest in _same_length("0" * n, b[1:])]
    return out


def int_range(lo: int, hi: int) -> str:
    """A GBNF alternation matching exactly the decimal numbers in [lo, hi] (no leading zeros)."""
    if lo < 0 or hi < lo:
        raise ValueError(f"empty or negative range [{lo}, {hi}]")
    alts: list[str] = []
    for length in range(len(str(lo)), len(str(hi)) + 1):
        a = max(lo, 10 ** (length - 1) if length > 1 else 0)
        b = min(hi, 10 ** length - 1)
        if a <= b:
            alts += _same_length(str(a), str(b))
    return " | ".join(f"({x})" if " " in x else x for x in alts)


def op_grammar(n_index: int, *, has_ops: bool, token_level: bool = False) -> str:
    """GBNF for the next op's header; indices in 1..n (lines) or 0..n-1 (tokens)."""
    lo, hi = (0, n_index - 1) if token_level else (1, n_index)
    opener = COPY_TOKENS_OPEN if token_level else COPY_LINES_OPEN
    alts, rules = [], []
    if lo <= hi:
        alts.append("copy")
        rules.append(f"copy ::= {_lit(opener)} idx {_lit(RANGE_SEP)} idx {_lit(COPY_CLOSE)}")
        rules.append(f"idx ::= {int_range(lo, hi)}")
    alts.append(_lit(GEN_OPEN))
    if has_ops:
        alts.append(_lit(PROGRAM_CLOSE))
    return "\n".join([f"root ::= {' | '.join(alts)}", *rules]) + "\n"


def end_grammar(start: int, n_index: int, *, token_level: bool = False) -> str:
    """GBNF for a copy's end index and the tag's close, after ``start`` and ``-`` are in the prompt."""
    hi = n_index - 1 if token_level else n_index
    return f"root ::= idx {_lit(COPY_CLOSE)}\nidx ::= {int_range(start, hi)}\n"


def op_regex(n_index: int, *, has_ops: bool, token_level: bool = False) -> str:
    """The same language as a regex (engines whose structured outputs take ``regex`` only)."""
    import re

    lo, hi = (0, n_index - 1) if token_level else (1, n_index)
    alts = []
    if lo <= hi:
        num = "(0|[1-9][0-9]*)" if token_level else "[1-9][0-9]*"
        opener = COPY_TOKENS_OPEN if token_level else COPY_LINES_OPEN
        alts.append(re.escape(opener) + num + re.escape(RANGE_SEP) + num + re.escape(COPY_CLOSE))
    alts.append(re.escape(GEN_OPEN))
    if has_ops:
        alts.append(re.escape(PROGRAM_CLOSE))
    return "(" + "|".join(alts) + ")"
