"""Token-level grammar FSM for edit programs: which token ids may come next, and which are forced.

Owns the token-id table (``TokenTable``, built ONCE per tokenizer by encoding the structural
literals of ``engine.prompt`` and scanning the vocabulary for pure-digit tokens — no constants),
and ``ProgramFSM``, the state machine the decoder drives token by token.

States (the seed's five plus the token-index variant):

* ``AWAIT_OP`` / ``AFTER_LT``: choosing the next op. The alternatives (``<copy lines="`` or
  ``<copy tokens="``, ``<gen>``, ``</program>``; no ``</program>`` before the first op, no copy when
  no copy range is left) form a trie over their canonical token sequences. A position where the
  surviving alternatives agree on one token is FORCED (no mask, no forward of its own); where they
  differ, the mask is the distinct next tokens. ``AFTER_LT`` is simply the state after the shared
  first token when the tokenizer has one (e.g. ``<``).
* ``COPY_LINES`` / ``COPY_TOKENS``: the two indices. The mask is the digit tokens that keep the
  number a valid prefix of a number within bounds (no leading zeros), plus the first token of the
  terminator (``-`` after the start, ``"/>`` after the end) once the number is complete and in
  bounds. Bounds: ``1 <= i <= j <= n_lines`` (lines) or ``0 <= a <= b < n_tokens`` (tokens);
  with ``monotonic=True`` additionally ``i > previous copy's end``. When only one token is
  allowed the step is forced. After the terminator the copy payload (``DocumentView.payload_ids``)
  is forced as a splice.
* ``GEN_BODY``: free text; the decoder detects ``</gen>`` (see ``engine.decode.gen_end``) and calls
  ``finish_gen``.
* ``CLOSE``: ``</program>`` forced; then ``DONE``.

``step()`` returns a ``Step``: ``force`` (ids to commit; ``copy=True`` for a splice payload),
``choose`` (``allowed``: 1-D LongTensor of ids; argmax over ``logits[allowed]``), ``free`` (gen
body) or ``done``. ``advance(token)`` consumes one token. ``clone()`` copies the state cheaply, so
speculative headers can be checked on a copy. ``op_token_ids`` gives an op's canonical tokens,
which forced mode and speculative headers feed through the same FSM.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import numpy as np
import torch

from engine.program.grammar import CopyLines, CopyTokens, Gen, escape
from engine.prompt import (
    COPY_CLOSE, COPY_LINES_OPEN, COPY_TOKENS_OPEN, GEN_CLOSE, GEN_OPEN, PROGRAM_CLOSE, RANGE_SEP,
    DocumentView,
)

AWAIT_OP = "AWAIT_OP"
AFTER_LT = "AFTER_LT"
COPY_LINES = "COPY_LINES"
COPY_TOKENS = "COPY_TOKENS"
GEN_BODY = "GEN_BODY"
CLOSE = "CLOSE"
DONE = "DONE"

_DIGITS = re.compile(r"[0-9]+")


class TokenTableError(ValueError):
    """A tokenizer cannot express the grammar (a literal does not round-trip, or no digit tokens)."""


@dataclass(frozen=True)
class Step:
    """What the FSM needs next: ``force`` ids, ``choose`` among ``allowed``, ``free`` text, or ``done``."""

    kind: str
    ids: tuple[int, ...] = ()
    allowed: torch.Tensor | None = None
    copy: bool = False


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
        stops = set(special)
        if getattr(tokenizer, "eos_token_id", None) is not None:
            stops.add(int(tokenizer.eos_token_id))
        self.stop_ids = frozenset(stops)
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


@dataclass
class ProgramFSM:
    """The grammar state of one program being decoded (see module doc)."""

    table: TokenTable
    view: DocumentView
    token_level: bool = False
    monotonic: bool = False
    state: str = AWAIT_OP
    ops: list = field(default_factory=list)
    _alts: list = field(default_factory=list)      # [(name, ids)] surviving literal alternatives
    _pos: int = 0                                   # tokens of the literal consumed so far
    _digits: str = ""                               # digits of the current index so far
    _start: int = -1                                # copy start once chosen
    _payload: tuple[int, ...] = ()                  # splice ids still to force
    _prev_end: int | None = None                    # previous copy's end (monotonic)

    def __post_init__(self) -> None:
        self._open_await()

    # ---- bounds -------------------------------------------------------------------------------
    @property
    def _index_hi(self) -> int:
        return self.view.n_tokens - 1 if self.token_level else self.view.n_lines

    @property
    def _start_lo(self) -> int:
        base = 0 if self.token_level else 1
        if self.monotonic and self._prev_end is not None:
            return max(base, self._prev_end + 1)
        return base

    def _bounds(self) -> tuple[int, int]:
        if self._start < 0:
            return self._start_lo, self._index_hi
        return self._start, self._index_hi

    # ---- transitions --------------------------------------------------------------------------
    def _open_await(self) -> None:
        self.state = AWAIT_OP
        alts = []
        if self._start_lo <= self._index_hi:
            alts.append(("copy", self.table.copy_tokens_open if self.token_level else self.table.copy_lines_open))
        alts.append(("gen", self.table.gen_open))
        if self.ops:
            alts.append(("close", self.table.program_close))
        self._alts, self._pos = alts, 0

    def _literal(self, name: str, ids: tuple[int, ...]) -> None:
        self._alts, self._pos = [(name, ids)], 0

    def _complete(self, name: str) -> None:
        if name == "copy":
            self.state = COPY_TOKENS if self.token_level else COPY_LINES
            self._digits, self._start = "", -1
        elif name == "gen":
            self.state = GEN_BODY
        elif name == "close":
            self.state = DONE
        elif name == "sep":
            self._digits = ""
        elif name == "copy_close":
            end = int(self._digits)
            op = CopyTokens(self._start, end) if self.token_level else CopyLines(self._start, end)
            self.ops.append(op)
            self._prev_end = end
            self._payload = tuple(self.view.payload_ids(self._start, end, token_level=self.token_level))
            self._start, self._digits = -1, ""
            self._alts = []
            if not self._payload:
                self._open_await()
        else:  # pragma: no cover - internal names only
            raise AssertionError(name)

    # ---- public API ---------------------------------------------------------------------------
    def step(self) -> Step:
        """What comes next (pure: does not change the state)."""
        if self.state == DONE:
            return Step("done")
        if self.state == GEN_BODY:
            return Step("free")
        if self._payload:
            return Step("force", self._payload, copy=True)
        if self._alts:
            survivors = self._alts
            nexts = {ids[self._pos] for _, ids in survivors}
            if len(nexts) > 1:
                return Step("choose", allowed=self.table.tensor(nexts))
            run, k = [], self._pos
            while True:  # the longest run the survivors agree on
                toks = {ids[k] if k < len(ids) else None for _, ids in survivors}
                if len(toks) != 1 or None in toks:
                    break
                run.append(toks.pop())
                k += 1
            return Step("force", tuple(run))
        # inside an index
        lo, hi = self._bounds()
        mask = self.table.digit_mask(self._digits, lo, hi)
        allowed = [int(t) for t in self.table.digit_ids[mask]]
        term = self.table.copy_close if self._start >= 0 else self.table.range_sep
        if self._digits and lo <= int(self._digits) <= hi:
            allowed.append(term[0])
        if not allowed:  # pragma: no cover - bounds guarantee a completion
            raise AssertionError(f"no index continuation at {self._digits!r} in [{lo}, {hi}]")
        if len(allowed) == 1:
            return Step("force", (allowed[0],))
        return Step("choose", allowed=torch.tensor(allowed, dtype=torch.long))

    def allows(self, token: int) -> bool:
        """Whether ``token`` is a legal next token (forced or allowed)."""
        st = self.step()
        if st.kind == "force":
            return st.ids[0] == token
        if st.kind == "choose":
            return bool((st.allowed == token).any())
        return st.kind == "free"

    def advance(self, token: int) -> None:
        """Consume one committed token (must be legal; gen-body tokens go to the decoder instead)."""
        token = int(token)
        if self.state in (DONE, GEN_BODY):
            raise ValueError(f"advance({token}) in state {self.state}: no structural token expected")
        if self._payload:
            if self._payload[0] != token:
                raise ValueError(f"splice expects token {self._payload[0]}, got {token}")
            self._payload = self._payload[1:]
            if not self._payload:
                self._open_await()
            return
        if self._alts:
            survivors = [(n, ids) for n, ids in self._alts if ids[self._pos] == token]
            if not survivors:
                raise ValueError(f"token {token} is not allowed in state {self.state}")
            self._alts, self._pos = survivors, self._pos + 1
            if self.state == AWAIT_OP and self._pos == 1 and len(survivors) > 1:
                self.state = AFTER_LT
            done = [n for n, ids in survivors if len(ids) == self._pos]
            if done:
                self._alts = []
                self._complete(done[0])
            return
        lo, hi = self._bounds()
        term = self.table.copy_close if self._start >= 0 else self.table.range_sep
        if self._digits and token == term[0] and lo <= int(self._digits) <= hi:
            if self._start < 0:
                self._start = int(self._digits)
                name = "sep"
            else:
                name = "copy_close"
            if len(term) == 1:
                self._complete(name)
            else:
                self._literal(name, term)
                self._pos = 1
            return
        where = np.nonzero(self.table.digit_ids == token)[0]
        if len(where) == 0 or not self.table.digit_mask(self._digits, lo, hi)[where[0]]:
            raise ValueError(f"token {token} is not a valid index digit after {self._digits!r} in [{lo}, {hi}]")
        self._digits += self.table.digit_strs[where[0]]

    def finish_gen(self, text: str, *, eos: bool = False) -> None:
        """Close the open gen with its decoded (escaped) body; ``eos`` also closes the program."""
        from engine.program.grammar import unescape

        if self.state != GEN_BODY:
            raise ValueError(f"finish_gen in state {self.state}")
        self.ops.append(Gen(unescape(text)))
        if eos:
            self.state = CLOSE
            self._literal("close", self.table.program_close)
        else:
            self._open_await()

    def truncate(self, gen_text: str | None = None) -> None:
        """Stop now (token budget or context full): keep completed ops (+ the open gen's text)."""
        from engine.program.grammar import unescape

        if self.state == GEN_BODY and gen_text is not None:
            self.ops.append(Gen(unescape(gen_text)))
        self.state, self._alts, self._payload = DONE, [], ()

    def clone(self) -> "ProgramFSM":
        """An independent copy of the state (ops list copied; table/view shared)."""
        other = copy.copy(self)
        other.ops = list(self.ops)
        other._alts = list(self._alts)
        return other

    @property
    def current_op(self) -> int:
        """Index of the op the next committed token belongs to (a splice belongs to its copy)."""
        return len(self.ops) - (1 if self._payload else 0)

    @property
    def at_op_start(self) -> bool:
        """True when no token of the next op has been committed yet."""
        return self.state == AWAIT_OP and self._pos == 0 and not self._payload


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
