"""The lossless greedy verifier: ONE forward over pending ids + a draft, keep the greedy prefix.

    verify_greedy(runner, pending_ids, draft, *, mask=None, choose=None) -> Verification

`pending_ids` are committed tokens whose KV entries are not in the cache yet (at least the last
committed token: its logits predict the next one). They ride along in the verify forward. Every
kept token equals greedy decoding's choice, so a draft changes the number of forwards, never the
output. Drafters: ``engine.drafters``; choosers: ``engine.decode.choosers``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from engine.decode.choosers import greedy_choice

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
