"""Token-level grammar FSM for edit programs: which token ids may come next, and which are forced.

Owns ``ProgramFSM``, the state machine the decoder drives token by token, over a ``TokenTable``
(``engine.guide.tokens``: the grammar's literals as ids, built once per tokenizer).

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
speculative headers can be checked on a copy; ``literal_pos`` says how many tokens of the current
literal are already committed. ``engine.guide.tokens.op_token_ids`` gives an op's canonical
tokens, which forced mode and speculative headers feed through the same FSM.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch

from engine.guide.tokens import TokenTable
from engine.program.grammar import CopyLines, CopyTokens, Gen, unescape
from engine.prompt import DocumentView

AWAIT_OP = "AWAIT_OP"
AFTER_LT = "AFTER_LT"
COPY_LINES = "COPY_LINES"
COPY_TOKENS = "COPY_TOKENS"
GEN_BODY = "GEN_BODY"
CLOSE = "CLOSE"
DONE = "DONE"


@dataclass(frozen=True)
class Step:
    """What the FSM needs next: ``force`` ids, ``choose`` among ``allowed``, ``free`` text, or ``done``."""

    kind: str
    ids: tuple[int, ...] = ()
    allowed: torch.Tensor | None = None
    copy: bool = False


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
    def literal_pos(self) -> int:
        """Tokens of the current structural literal (an op opener or ``</program>``) already committed."""
        return self._pos

    @property
    def choosing_op(self) -> bool:
        """True while the next op is being chosen (``AWAIT_OP`` / ``AFTER_LT``)."""
        return self.state in (AWAIT_OP, AFTER_LT)

    @property
    def at_op_start(self) -> bool:
        """True when no token of the next op has been committed yet."""
        return self.state == AWAIT_OP and self._pos == 0 and not self._payload
