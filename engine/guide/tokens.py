"""The grammar as token ids, built ONCE per tokenizer (outlines-style: plain id lists, no constants).

Owns ``TokenTable`` (the ids of the structural literals of ``engine.program.grammar``, the pure-digit
tokens of the vocabulary, and the stop ids), ``token_table(tokenizer)`` (cached per tokenizer),
``stop_ids(tokenizer)`` (the ONE definition of the tokens that end an answer, used by the program
FSM and by full regeneration alike) and the canonical spelling of ops as token ids
(``op_token_parts`` / ``op_token_ids`` / ``program_token_ids``), which forced decoding, speculative
headers and training targets feed through the same FSM.
"""
from __future__ import annotations

import re

import numpy as np
import torch

from engine.errors import TokenTableError
from engine.program.grammar import (
    COPY_CLOSE, COPY_LINES_OPEN, COPY_TOKENS_OPEN, GEN_CLOSE, GEN_OPEN, PROGRAM_CLOSE, RANGE_SEP, CopyLines,
    CopyTokens, Gen, escape,
)
from engine.prompt import DocumentView

_DIGITS = re.compile(r"[0-9]+")
# End-of-turn specials some tokenizers do not list among their special ids.
_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>")


def stop_ids(tokenizer) -> frozenset[int]:
    """Ids that end an answer: every special id, ``eos_token_id`` and known end-of-turn tokens."""
    stops = set(getattr(tokenizer, "all_special_ids", []) or [])
    if getattr(tokenizer, "eos_token_id", None) is not None:
        stops.add(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    for tok in _END_OF_TURN:
        if tok in vocab:
            stops.add(int(vocab[tok]))
    return frozenset(int(t) for t in stops)


class TokenTable:
    """Per-tokenizer ids of the structural literals, digit tokens and stop tokens (built once)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

        def enc(text: str) -> tuple[int, ...]:
            ids = tuple(tokenizer.encode(text, add_special_tokens=False))
            if not ids or tokenizer.decode(list(ids)) != text:
                raise TokenTableError(
                    f"tokenizer {type(tokenizer).__name__} does not encode the grammar literal {text!r} "
                    f"reversibly (got {list(ids)}); use a byte-level or character-complete tokenizer")
            return ids

        self.copy_lines_open = enc(COPY_LINES_OPEN)
        self.copy_tokens_open = enc(COPY_TOKENS_OPEN)
        self.gen_open = enc(GEN_OPEN)
        self.gen_close = enc(GEN_CLOSE)
        self.program_close = enc(PROGRAM_CLOSE)
        self.range_sep = enc(RANGE_SEP)
        self.copy_close = enc(COPY_CLOSE)
        digit_ids, digit_strs = [], []
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        for tid in range(len(tokenizer)):
            if tid in special:
                continue
            s = tokenizer.decode([tid])
            if _DIGITS.fullmatch(s):
                digit_ids.append(tid)
                digit_strs.append(s)
        if not any(len(s) == 1 for s in digit_strs) or len({s for s in digit_strs if len(s) == 1}) < 10:
            raise TokenTableError(
                f"tokenizer {type(tokenizer).__name__} lacks single-digit tokens 0-9; copy indices "
                f"cannot be spelled. Found digit tokens: {sorted(set(digit_strs))[:20]}")
        self.digit_ids = np.array(digit_ids, dtype=np.int64)
        self.digit_strs = digit_strs
        self.digit_vals = np.array([int(s) for s in digit_strs], dtype=np.int64)
        self.digit_lens = np.array([len(s) for s in digit_strs], dtype=np.int64)
        self.digit_lead0 = np.array([s[0] == "0" for s in digit_strs], dtype=bool)
        self._digit_by_str = {s: t for t, s in zip(digit_ids, digit_strs)}
        self._max_digit_len = int(self.digit_lens.max())
        self.stop_ids = stop_ids(tokenizer)
        self._tensor_cache: dict[tuple[int, ...], torch.Tensor] = {}

    def tensor(self, ids) -> torch.Tensor:
        """A cached 1-D LongTensor of sorted ids (masks for literal decision points)."""
        key = tuple(sorted(set(int(i) for i in ids)))
        t = self._tensor_cache.get(key)
        if t is None:
            t = torch.tensor(key, dtype=torch.long)
            self._tensor_cache[key] = t
        return t

    def number_ids(self, value: int) -> list[int]:
        """Canonical digit tokens of a non-negative number (greedy longest-match over digit tokens)."""
        s, out = str(value), []
        while s:
            for n in range(min(len(s), self._max_digit_len), 0, -1):
                tid = self._digit_by_str.get(s[:n])
                if tid is not None:
                    out.append(tid)
                    s = s[n:]
                    break
        return out

    def digit_mask(self, prefix: str, lo: int, hi: int) -> np.ndarray:
        """Boolean mask over digit tokens that keep ``prefix + token`` a prefix of a number in [lo, hi]."""
        if prefix == "0" or hi < lo:
            return np.zeros(len(self.digit_ids), dtype=bool)
        base = int(prefix) if prefix else 0
        lens = self.digit_lens
        vals = base * (10 ** lens) + self.digit_vals
        total = len(prefix) + lens
        ok = np.zeros(len(vals), dtype=bool)
        if not prefix:  # a leading zero is only valid as the whole number "0"
            zero_ok = (self.digit_vals == 0) & (lens == 1) & (lo <= 0)
            ok |= zero_ok
            candidates = ~self.digit_lead0
        else:
            candidates = np.ones(len(vals), dtype=bool)
        max_len = len(str(hi))
        for k in range(0, max_len + 1):
            scale = 10 ** k
            fits = (total + k <= max_len) & (vals * scale <= hi) & ((vals + 1) * scale - 1 >= lo)
            ok |= candidates & fits & (vals > 0)
        return ok


_TABLES: dict[int, tuple[object, TokenTable]] = {}


def token_table(tokenizer) -> TokenTable:
    """The tokenizer's TokenTable, built on first use and cached for the process."""
    hit = _TABLES.get(id(tokenizer))
    if hit is not None and hit[0] is tokenizer:
        return hit[1]
    table = TokenTable(tokenizer)
    _TABLES[id(tokenizer)] = (tokenizer, table)
    return table


def op_token_parts(table: TokenTable, view: DocumentView, op) -> list[tuple[str, list[int]]]:
    """An op's canonical tokens as the FSM spells them, in labelled parts.

    Labels: ``"tag"`` (copy header, ``<gen>``, ``</gen>``, ``</program>``), ``"payload"`` (the ids a
    copy splices: context only, never chosen by the model) and ``"gen"`` (the escaped gen body).
    ``op_token_ids`` concatenates them; training targets (``training.render``) use the labels.
    """
    if isinstance(op, (CopyLines, CopyTokens)):
        opener = table.copy_tokens_open if isinstance(op, CopyTokens) else table.copy_lines_open
        tag = [*opener, *table.number_ids(op.start), *table.range_sep, *table.number_ids(op.end), *table.copy_close]
        return [("tag", tag), ("payload", view.payload_ids(op.start, op.end, token_level=isinstance(op, CopyTokens)))]
    if isinstance(op, Gen):
        body = list(table.tokenizer.encode(escape(op.text), add_special_tokens=False))
        return [("tag", list(table.gen_open)), ("gen", body), ("tag", list(table.gen_close))]
    if op == "close":
        return [("tag", list(table.program_close))]
    raise TypeError(f"not a program op: {op!r}")


def op_token_ids(table: TokenTable, view: DocumentView, op, *, token_level: bool = False) -> list[int]:
    """Canonical tokens of one op as the FSM spells it (copy tag + splice payload; gen + close)."""
    return [t for _, ids in op_token_parts(table, view, op) for t in ids]


def program_token_ids(table: TokenTable, view: DocumentView, program, *, token_level: bool = False) -> list[int]:
    """Canonical tokens of a whole program after ``<program>`` (ops, then ``</program>``)."""
    out: list[int] = []
    for op in program:
        out.extend(op_token_ids(table, view, op, token_level=token_level))
    out.extend(table.program_close)
    return out
