"""The drafter interface: a proposer guesses the next tokens, a decoding loop verifies them.

Owns the contract between free-text decoding loops (full regeneration in engine.decode.regen, gen bodies
in engine.decode.gen_body) and speculative proposers (engine.drafters.pld, engine.drafters.document).
The verifier is ``engine.decode.verify.verify_greedy``.
Modelled on HF transformers' `CandidateGenerator`: a proposer guesses the next tokens, the target
model checks the whole guess in ONE forward, and the loop keeps the longest prefix that equals the
model's own greedy choice plus one "bonus" token. Because every kept token is exactly the token
greedy decoding would have produced, speculation changes the number of forwards, never the output.

    class DraftProposer(Protocol):
        def propose(self, context_ids: list[int], generated: list[int]) -> list[int]  # draft ids
        def update(self, accepted: int) -> None     # how many of the last draft were accepted

    verify_greedy(runner, pending_ids, draft, *, mask=None, choose=None) -> Verification

Two optional methods, additive (a drafter without them is used as above; call them through the
helpers ``propose_candidates`` and ``attach_session``, which supply the defaults):

        def propose_many(self, context_ids, generated, limit) -> list[list[int]]
            # up to `limit` ALTERNATIVE drafts; the loop verifies them together in one forward
            # (engine.decode.verify.verify_candidates) and keeps the longest accepted one.
            # Default: [propose(context_ids, generated)].
        def attach(self, session) -> None
            # told the session the loop verifies on, before the first propose (idempotent); a
            # drafter that reads the model's hidden states (engine.drafters.switchsd) asks it to
            # record them here. Default: nothing.
        def begin_gen(self, replaced_ids) -> None
            # the program decoder opens a gen: `replaced_ids` are the ids the gen body would have if
            # it kept the document lines after the last copy unchanged (engine.drafters.replaced
            # drafts from them). Default: nothing.
        drafts_ahead = True   # (class attribute) its draft depends on ids only, so the program decoder
            # may ask for a gen's first draft before the forward that opens the gen and verify both
            # in that forward (`drafts_ahead(proposer)`). Default: False.

`pending_ids` are committed tokens whose KV entries are not in the cache yet (at least the last
committed token: its logits predict the next one). They ride along in the verify forward.
"""
from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable


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


def joined(context_ids: list[int], generated: list[int]) -> list[int]:
    """All ids so far: ``context_ids`` then ``generated``, unless ``context_ids`` already ends with them
    (the program decoder passes its whole output as context, gen body included)."""
    tokens = list(context_ids)
    if not generated or tokens[-len(generated):] != list(generated):
        tokens += generated
    return tokens


def propose_candidates(proposer, context_ids: list[int], generated: list[int], limit: int) -> list[list[int]]:
    """The proposer's alternative drafts (``propose_many``), or ``[propose(...)]`` when it has none;
    empty drafts are dropped, so ``[]`` means no guess this round."""
    many = getattr(proposer, "propose_many", None)
    drafts = many(context_ids, generated, limit) if many is not None and limit > 1 else \
        [proposer.propose(context_ids, generated)]
    return [list(d) for d in drafts if d][:max(1, limit)]


def drafts_ahead(proposer) -> bool:
    """Whether the proposer may be asked for a gen's first draft BEFORE the forward that opens the gen
    (the program decoder then verifies ``<gen>`` and that draft in one forward). A drafter says so
    with a class attribute ``drafts_ahead = True``: its draft must depend on the ids it is given and
    its own state only (no session it reads, no screening, one candidate)."""
    return bool(getattr(proposer, "drafts_ahead", False))


def begin_gen(proposer, replaced_ids: Callable[[], list[int]]) -> None:
    """Tell the proposer a gen starts and which ids it replaces (``begin_gen``), if it wants to know;
    ``replaced_ids`` is called only then (drafters without the method cost nothing)."""
    begin = getattr(proposer, "begin_gen", None)
    if begin is not None:
        begin(replaced_ids())


def attach_session(proposer, session) -> None:
    """Tell the proposer which session the loop verifies on (``attach``), if it wants to know."""
    attach = getattr(proposer, "attach", None)
    if attach is not None:
        attach(session)
