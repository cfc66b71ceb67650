"""Draft-proposer interface and the shared lossless greedy verifier.

Owns the contract between free-text decoding loops (full regeneration in engine.decode.regen, gen bodies
in engine.decode.program) and speculative proposers (engine.drafters.pld, engine.drafters.document).
Modelled on HF transformers' `CandidateGenerator`: a proposer guesses the next tokens, the target
model checks the whole guess in ONE forward, and the loop keeps the longest prefix that equals the
model's own greedy choice plus one "bonus" token. Because every kept token is exactly the token
greedy decoding would have produced, speculation changes the number of forwards, never the output.

    class DraftProposer(Protocol):
        def propose(self, context_ids: list[int], generated: list[int]) -> list[int]  # draft ids
        def update(self, accepted: int) -> None     # how many of the last draft were accepted

    verify_greedy(runner, pending_ids, draft, *, mask=None, choose=None) -> Verification

`pending_ids` are committed tokens whose KV entries are not in the cache yet (at least the last
committed token: its logits predict the next one). They ride along in the verify forward.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import torch


@runtime_checkable
class DraftProposer(Protocol):
    """Guesses upcoming tokens; the verifier decides how many are kept."""

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        """Return draft token ids to follow `generated` (may be empty: no guess this round).

        `context_ids` is everything before the text being generated (the prompt, and for a gen body
        the program so far); `generated` is the text generated so far, NOT included in context_ids.
        """
        ...

    def update(self, accepted: int) -> None:
        """Told how many tokens of the last returned draft the verifier accepted."""
        ...


class NoDraft:
    """The null proposer: plain greedy decoding, one forward per token."""

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        return []

    def update(self, accepted: int) -> None:
        return None


# mask(prefix) -> allowed token ids (1-D LongTensor) after `prefix` draft tokens, or None = all.
MaskFn = Callable[[list[int]], "torch.Tensor | None"]
# choose(position, logits_row, prefix) -> the token the loop commits at that position
# (default: greedy argmax, optionally under `mask`). Forced mode passes the gold token here.
ChooseFn = Callable[[int, "torch.Tensor", list[int]], int]


@dataclass
class Verification:
    """Outcome of one verify forward."""

    accepted: list[int]   # longest draft prefix equal to the model's choices
    bonus: int            # the model's own choice after the accepted prefix (not yet fed)
    drafted: int          # len(draft) that was verified

    @property
    def committed(self) -> list[int]:
        """All tokens this round commits, in order: accepted draft + bonus."""
        return self.accepted + [self.bonus]


def greedy_choice(logits_row: torch.Tensor, allowed: torch.Tensor | None = None) -> int:
    """Argmax of one logits row, restricted to `allowed` ids when given."""
    if allowed is None:
        return int(torch.argmax(logits_row))
    if allowed.numel() == 0:
        raise ValueError("mask allows no token: the decoder's grammar state has no continuation")
    return int(allowed[torch.argmax(logits_row.index_select(0, allowed))])


def verify_greedy(
    runner,
    pending_ids: list[int],
    draft: list[int],
    *,
    mask: MaskFn | None = None,
    choose: ChooseFn | None = None,
) -> Verification:
    """Feed `pending_ids + draft` in ONE forward and keep the greedy-consistent draft prefix.

    Row i of the kept logits predicts the token after `draft[:i]`. Draft token i is accepted while
    it equals the committed choice at that row (argmax, under `mask(draft[:i])` if given, or
    `choose(i, row, draft[:i])`). The bonus is the choice at the first rejected row (or after the
    whole draft). The cache is cropped to drop the rejected tail; the bonus is NOT fed (the caller
    passes it as the next round's pending id).
    """
    if not pending_ids:
        raise ValueError("verify_greedy needs at least one pending id (the last committed token)")
    base = runner.length
    logits = runner.feed(list(pending_ids) + list(draft), keep=len(draft) + 1)
    accepted: list[int] = []
    bonus = -1
    for i in range(len(draft) + 1):
        prefix = draft[:i]
        if choose is not None:
            token = int(choose(i, logits[i], prefix))
        else:
            token = greedy_choice(logits[i], mask(prefix) if mask is not None else None)
        if i < len(draft) and token == draft[i]:
            accepted.append(token)
            continue
        bonus = token
        break
    runner.crop(base + len(pending_ids) + len(accepted))
    return Verification(accepted=accepted, bonus=bonus, drafted=len(draft))
