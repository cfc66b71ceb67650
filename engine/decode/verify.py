"""The lossless greedy verifier: ONE forward over pending ids + a draft, keep the greedy prefix.

    verify_greedy(runner, pending_ids, draft, *, mask=None, choose=None) -> Verification
    verify_candidates(runner, pending_ids, candidates, *, mask=None, choose=None) -> Verification
    accept_prefix(rows, draft, pick, *, start=0, bonus=True) -> (accepted, bonus)   # the rule alone

`pending_ids` are committed tokens whose KV entries are not in the cache yet (at least the last
committed token: its logits predict the next one). They ride along in the verify forward. Every
kept token equals greedy decoding's choice, so a draft changes the number of forwards, never the
output. ``verify_candidates`` checks several alternative drafts in the same ONE forward (the
session's ``feed_candidates``: a block-triangular mask keeps them apart) and keeps the candidate
whose accepted prefix is longest (ties: the first); every candidate is judged by the same
``accept_prefix``, so the committed tokens are still greedy's. ``accept_prefix`` is the acceptance rule alone, shared with the program decoder's gen bodies
(``engine.decode.gen_body``), whose rows may come from a forward that also carried other ids.
Drafters: ``engine.drafters``; choosers: ``engine.decode.choosers``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from engine.decode.choosers import greedy_choice

# the most alternative drafts a decoding loop verifies in one forward (verify_candidates)
MAX_CANDIDATES = 8

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
    drafted: int          # draft tokens fed in the forward (all candidates together)
    index: int = 0        # which of the candidates won (verify_candidates; 0 for a single draft)
    rows: list | None = None  # the winner's logits rows (row i predicts the token after accepted[:i])

    @property
    def committed(self) -> list[int]:
        """All tokens this round commits, in order: accepted draft + bonus."""
        return self.accepted + [self.bonus]


def accept_prefix(rows, draft: list[int], pick: Callable[[int, "torch.Tensor"], int], *, start: int = 0,
                  bonus: bool = True) -> tuple[list[int], int | None]:
    """THE acceptance rule of every verify forward: keep the draft while it equals the model's choices.

    ``rows[i]`` predicts the token after ``draft[:i]``; ``pick(i, rows[i])`` is the token the loop
    would commit there (greedy, masked or forced). Returns ``(accepted, bonus)``: the draft tokens
    ``draft[start:k]`` that equal the choices, and the choice at the first rejected row ``k`` (or
    after the whole draft). With ``bonus=False`` a fully accepted draft returns ``None`` as bonus and
    the row after the draft is not looked at (the caller verifies what follows another way).
    """
    accepted: list[int] = []
    for i in range(start, len(draft) + 1):
        if i == len(draft) and not bonus:
            return accepted, None
        token = pick(i, rows[i])
        if i < len(draft) and token == draft[i]:
            accepted.append(token)
            continue
        return accepted, token
    raise AssertionError("unreachable: the loop returns at the first rejected row or after the draft")


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

    def pick(i: int, row) -> int:
        if choose is not None:
            return int(choose(i, row, draft[:i]))
        return greedy_choice(row, mask(draft[:i]) if mask is not None else None)

    accepted, bonus = accept_prefix(logits, draft, pick)
    runner.crop(base + len(pending_ids) + len(accepted))
    return Verification(accepted=accepted, bonus=bonus, drafted=len(draft), rows=list(logits))


def _distinct(candidates: list[list[int]]) -> list[tuple[int, list[int]]]:
    """(index, candidate) of the non-empty candidates, without duplicates or prefixes of another one.

    A dropped candidate can never accept more than the longer one it is a prefix of (their rows
    agree on the shared prefix), so dropping it changes no committed token."""
    kept: list[tuple[int, list[int]]] = []
    for index, cand in enumerate(candidates):
        cand = list(cand)
        if not cand or any(k[:len(cand)] == cand for _, k in kept):
            continue
        longer = [(i, k) for i, k in kept if cand[:len(k)] == k]
        kept = [(i, k) for i, k in kept if cand[:len(k)] != k]
        kept.append((longer[0][0] if longer else index, cand))
    return sorted(kept)


def verify_candidates(
    runner,
    pending_ids: list[int],
    candidates: list[list[int]],
    *,
    mask: MaskFn | None = None,
    choose: ChooseFn | None = None,
) -> Verification:
    """Verify W alternative drafts in ONE forward; keep the candidate with the longest accepted prefix.

    Each candidate is judged exactly as ``verify_greedy`` judges a single draft (``accept_prefix``
    over its own rows; ``mask``/``choose`` see that candidate's prefix); ties go to the first. With
    at most one distinct candidate, or a session without ``feed_candidates``, this IS
    ``verify_greedy`` on the first candidate. The cache ends holding pending + the winner's accepted
    prefix; the bonus is not fed.
    """
    if not pending_ids:
        raise ValueError("verify_candidates needs at least one pending id (the last committed token)")
    distinct = _distinct(candidates)
    drafts = [cand for _, cand in distinct]
    if len(drafts) <= 1 or not hasattr(runner, "feed_candidates"):
        return verify_greedy(runner, pending_ids, drafts[0] if drafts else [], mask=mask, choose=choose)
    judged: list[tuple[list[int], int]] = []

    def select(rows_per_candidate) -> tuple[int, int]:
        for draft, rows in zip(drafts, rows_per_candidate):
            def pick(i: int, row, _draft=draft) -> int:
                if choose is not None:
                    return int(choose(i, row, _draft[:i]))
                return greedy_choice(row, mask(_draft[:i]) if mask is not None else None)

            judged.append(accept_prefix(rows, draft, pick))
        best = max(range(len(drafts)), key=lambda w: (len(judged[w][0]), -w))
        return best, len(judged[best][0])

    rows = runner.feed_candidates(list(pending_ids), drafts, select)
    best = max(range(len(drafts)), key=lambda w: (len(judged[w][0]), -w))
    accepted, bonus = judged[best]
    return Verification(accepted=accepted, bonus=bonus, drafted=sum(map(len, drafts)), index=distinct[best][0],
                        rows=list(rows[best]))
