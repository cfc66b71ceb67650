"""Screened verify forwards for the free-text loops: CopyLoop's shallow screening, when the drafter asks.

A drafter that exposes ``screen_depth`` (``engine.drafters.copyloop``) asks the loops to verify its
drafts with a screened forward (``engine.backends.shallow``): the draft runs through the first
``screen_depth`` decoder layers, is cut at the first token the shallow readout disagrees with, and
only the survivors continue at depth. The kept prefix is then decided on the full-depth logits by
``engine.decode.verify.accept_prefix``, the rule of every verify forward, so the output is identical
to greedy. Sessions that cannot screen (another backend, a model without the Llama layout, a depth
outside the model, the first forward of a session) get the plain forward.

    screen_depth(runner, drafter) -> int        # 0: verify unscreened
    screened_feed(runner, ids, *, keep, first, depth) -> logits   # survivors' rows (fewer when cut)
    verify_screened(runner, pending_ids, draft, *, depth, choose=None) -> Verification

The free-text loop (``engine.decode.generate``, full regeneration) calls ``verify_screened``; gen
bodies (``engine.decode.gen_body``) pass ``screened_feed`` as their verify forward.
"""
from __future__ import annotations

from engine.decode.choosers import greedy_choice
from engine.decode.verify import ChooseFn, Verification, accept_prefix, verify_greedy


def screen_depth(runner, drafter) -> int:
    """The screening depth ``drafter`` asks for, if ``runner`` can screen at it (else 0)."""
    depth = int(getattr(drafter, "screen_depth", 0) or 0)
    if depth <= 0:
        return 0
    from engine.backends.shallow import supports

    return depth if supports(runner, depth) else 0


def screened_feed(runner, ids: list[int], *, keep: int, first: int, depth: int):
    """One verify forward over ``ids`` (draft from ``first``), screened when possible; the rows of the
    last ``keep`` positions that survived (``keep - len(rows)`` draft tokens were screened out)."""
    if depth > 0 and first >= 1 and len(ids) > first:
        from engine.backends.shallow import screened_feed as shallow_feed, supports

        if supports(runner, depth):
            return shallow_feed(runner, ids, keep=keep, first=first, depth=depth)
    return runner.feed(ids, keep=keep)


def verify_screened(runner, pending_ids: list[int], draft: list[int], *, depth: int,
                    choose: ChooseFn | None = None) -> Verification:
    """``verify_greedy`` with the draft screened at ``depth`` first (see module doc)."""
    if not pending_ids:
        raise ValueError("verify_screened needs at least one pending id (the last committed token)")
    if not draft or depth <= 0:
        return verify_greedy(runner, pending_ids, draft, choose=choose)
    base = runner.length
    logits = screened_feed(runner, list(pending_ids) + list(draft), keep=len(draft) + 1,
                           first=len(pending_ids), depth=depth)
    kept = list(draft[:len(logits) - 1])

    def pick(i: int, row) -> int:
        return int(choose(i, row, kept[:i])) if choose is not None else greedy_choice(row, None)

    accepted, bonus = accept_prefix(logits, kept, pick)
    runner.crop(base + len(pending_ids) + len(accepted))
    return Verification(accepted=accepted, bonus=bonus, drafted=len(draft))
