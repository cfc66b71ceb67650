"""Token choosers: how a decoding loop turns a logits row into the token it commits.

* ``greedy_choice(row, allowed=None)``: argmax, restricted to ``allowed`` ids when given (the FSM's mask);
* ``Chooser``: the program decoder's chooser: greedy (masked where the FSM masks), or, in forced
  mode, the forced program's canonical token at the current output position, checked against the
  mask (a token the grammar does not allow raises ``ForcedProgramError``). It keeps the probability
  of each greedy choice (under the mask, as the grammar leaves the model the choice), and
  ``confidence(out)`` is the least of them over a finished output: how sure the model was of its
  least sure choice.

Every kept token is the token greedy decoding would commit, so speculation (drafts, guessed
headers) changes the number of forwards, never the output.
"""
from __future__ import annotations

import math

import torch

from engine.errors import ForcedProgramError


def _logprob(row: torch.Tensor, allowed: torch.Tensor | None, tok: int) -> float:
    """log p(tok) under the softmax of ``row`` (restricted to ``allowed`` when given)."""
    logits = row.float() if allowed is None else row.float().index_select(0, allowed)
    return float(row[tok].float() - torch.logsumexp(logits, 0))


def greedy_choice(logits_row: torch.Tensor, allowed: torch.Tensor | None = None) -> int:
    """Argmax of one logits row, restricted to `allowed` ids when given."""
    if allowed is None:
        return int(torch.argmax(logits_row))
    if allowed.numel() == 0:
        raise ValueError("mask allows no token: the decoder's grammar state has no continuation")
    return int(allowed[torch.argmax(logits_row.index_select(0, allowed))])


class Chooser:
    """Greedy masked argmax, or the forced program's token at the current output position."""

    def __init__(self, target: list[int] | None, op_starts: list[int] | None = None):
        self.target = target
        self.op_starts = op_starts or []
        self._logprobs: dict[int, tuple[int, float]] = {}   # output position -> (greedy choice, its log-prob)

    def choose(self, row: torch.Tensor, allowed: torch.Tensor | None, pos: int) -> int:
        if self.target is None:
            tok = greedy_choice(row, allowed)
            self._logprobs[pos] = (tok, _logprob(row, allowed, tok))
            return tok
        if pos >= len(self.target):
            raise ForcedProgramError(f"forced program ended at output token {pos} but the grammar expects more")
        tok = self.target[pos]
        if allowed is not None and not bool((allowed == tok).any()):
            op = sum(1 for s in self.op_starts if s <= pos) - 1
            raise ForcedProgramError(
                f"forced program op #{op} is not allowed by the grammar at output token {pos} "
                f"(token {tok} not in the FSM mask): an index out of the document's bounds, or a "
                f"non-monotonic copy with monotonic=True")
        return tok

    def confidence(self, out: list[int]) -> float | None:
        """The least probability among the greedy choices that made ``out`` (a choice later replaced,
        by a rejected guess, does not count); None when the model chose nothing (forced mode)."""
        kept = [lp for pos, (tok, lp) in self._logprobs.items() if pos < len(out) and out[pos] == tok]
        return math.exp(min(kept)) if kept else None
