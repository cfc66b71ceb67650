"""A draft model: a smaller model of the same tokenizer guesses the next tokens (classic speculative decoding).

For users who point ``model`` at a larger model (engine.backends.model) and name a small one of the same
family as ``draft_model`` (``EditEngine(draft_model=...)``, the server setting ``draftModel``,
``cad-apply --draft-model``): each round the draft model decodes ``window`` tokens greedily after the
context, and the decoding loop verifies them with the target in ONE forward (``engine.decode.verify``),
so the output stays the target's greedy output. The draft keeps its own KV session across rounds: a
round crops it back to the ids it shares with the new context (what the target rejected is dropped)
and feeds only the rest.

It is also SwitchSD's neural drafter below the copy-intent threshold (``engine.drafters.switchsd``):
the SwitchSD paper falls back to a draft model where no copy is likely.

A draft pays off when its forward is much cheaper than the target's (≥ 5× fewer parameters, say
SmolLM2-135M drafting for SmolLM2-1.7B); a draft as large as the target only adds forwards.
"""
from __future__ import annotations

from engine.drafters.base import joined


class DraftModelProposer:
    """Greedy drafts of ``window`` tokens from ``draft`` (a ``engine.backends.base.Backend``)."""

    def __init__(self, draft, window: int = 6):
        if window < 1:
            raise ValueError(f"draft window must be >= 1, got {window}")
        self.draft, self.window = draft, window
        self._session = None
        self.counts = {"rounds": 0, "draft_forwards": 0, "drafted": 0, "accepted": 0}

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        ids = joined(context_ids, generated)
        if not ids:
            return []
        if self._session is None:
            self._session = self.draft.session()
        session = self._session
        shared = 0
        for a, b in zip(session.ids, ids):
            if a != b:
                break
            shared += 1
        shared = min(shared, len(ids) - 1)      # at least one id fed: its logits predict the next one
        session.crop(shared)
        logits = session.feed(ids[shared:], keep=1)
        draft: list[int] = []
        while True:
            self.counts["draft_forwards"] += 1
            draft.append(int(logits[-1].argmax()))
            if len(draft) >= self.window:
                break
            logits = session.feed(draft[-1:], keep=1)
        self.counts["rounds"] += 1
        self.counts["drafted"] += len(draft)
        return draft

    def update(self, accepted: int) -> None:
        self.counts["accepted"] += accepted


def check_draft_compatible(target, draft) -> None:
    """Raise ValueError unless ``draft`` tokenizes like ``target`` (a draft's ids must mean the target's)."""
    probe = "def f(x):\n    return x + 1  # ok\n"
    t_tok, d_tok = target.tokenizer, draft.tokenizer
    if len(t_tok) != len(d_tok) or list(t_tok.encode(probe)) != list(d_tok.encode(probe)):
        raise ValueError(f"the draft model {getattr(draft, 'spec', '?')!r} does not share the tokenizer of "
                         f"{getattr(target, 'spec', '?')!r} (vocabularies of {len(d_tok)} and {len(t_tok)} "
                         "tokens): a draft model must come from the same family (e.g. SmolLM2-135M for SmolLM2-1.7B)")
