"""Speculative drafters for free-text decoding (lossless: output == greedy), and their registry.

``REGISTRY`` maps a drafter name to a factory ``(document_ids, **options) -> DraftProposer``;
``make_proposer(drafter, ...)`` builds one (a ``DraftProposer`` instance passes through unchanged).
``document_ids`` is the text the drafter may treat as "the document": the regen framing around the
unedited document in full regeneration (``engine.decode.regen``), the document's own token ids inside
the program decoder's gen bodies (``engine.decode.program``). ``options`` are hints every caller may
pass (``window``: draft length, ``probe``: spec-edit's probing draft length); a drafter ignores those it
has no use for.

Names (``DRAFTERS``, in order; ``DEFAULT_GEN_DRAFTER`` drafts cad gen bodies unless a caller names
another): "none" (plain greedy), "pld" (prompt lookup), "spec-edit" (the
document as draft, with re-anchoring), "replaced-lines" (a gen body drafted from the document lines it
replaces, then prompt lookup), "switchsd" (SwitchSD: W recent kappa-gram continuations verified
together, gated by a copy-intent probe on the model's hidden state; below the gate the draft model, when
one is configured), "copyloop" (CopyLoop: context-copy proposals, screened at a shallow
depth before the full-depth verify; calibrated K and depth), "draft-model" (a smaller model of the same
tokenizer drafts greedily; needs the ``draft`` option: the backend's ``draft``, set by
``EditEngine(draft_model=...)``). Front ends list these through ``engine.api.DRAFTERS``; the
strategy registry (``engine.strategies``) names the drafter each regeneration strategy uses. A new
drafter is a module in this package implementing ``propose``/``update`` (``engine.drafters.base``)
plus one registry line below; every decoding loop verifies whatever it proposes
(``engine.decode.verify``), so no drafter can change the output.
"""
from __future__ import annotations

from typing import Callable

from engine.drafters.base import DraftProposer, NoDraft
from engine.drafters.copyloop import CopyLoopProposer
from engine.drafters.document import DocumentDraftProposer
from engine.drafters.draft_model import DraftModelProposer
from engine.drafters.pld import PromptLookupProposer
from engine.drafters.replaced import ReplacedLinesProposer
from engine.drafters.switchsd import SwitchSDProposer

__all__ = ["DraftProposer", "NoDraft", "REGISTRY", "DRAFTERS", "DEFAULT_GEN_DRAFTER", "make_proposer"]


def _document(document_ids: list[int] | None, *, window: int = 32, probe: int | None = None,
              **_) -> DraftProposer:
    if document_ids is None:
        raise ValueError("the 'spec-edit' drafter needs document_ids (the document's token ids)")
    return DocumentDraftProposer(document_ids, window=window, probe=probe)


def _draft_model(document_ids, *, draft=None, draft_window: int = 6, **_) -> DraftProposer:
    if draft is None:
        raise ValueError("the 'draft-model' drafter needs a draft model: name one with draft_model "
                         "(EditEngine(draft_model=...), the server setting draftModel, cad-apply --draft-model)")
    return DraftModelProposer(draft, window=draft_window)


REGISTRY: dict[str, Callable[..., DraftProposer]] = {
    "none": lambda document_ids, **_: NoDraft(),
    "pld": lambda document_ids, *, window=16, **_: PromptLookupProposer(window=window),
    "spec-edit": _document,
    "replaced-lines": lambda document_ids, *, window=16, **_: ReplacedLinesProposer(document_ids or [], window=window),
    "switchsd": lambda document_ids, *, window=16, draft=None, **_: SwitchSDProposer(
        window=window, fallback=None if draft is None else DraftModelProposer(draft)),
    "copyloop": lambda document_ids, **_: CopyLoopProposer(),
    "draft-model": _draft_model,
}
DRAFTERS: tuple[str, ...] = tuple(REGISTRY)
# The drafter of cad gen bodies when nobody names one: the replaced lines are the draft (a rewritten
# line keeps most of its tokens). Measured faster in wall time than "none" on HumanEvalPack-Fix and
# long documents, forced and free (benchmarks/results/speculative_default.md); lossless either way.
DEFAULT_GEN_DRAFTER = "replaced-lines"


def make_proposer(drafter: str | DraftProposer, *, document_ids: list[int] | None = None,
                  **options) -> DraftProposer:
    """The drafter called `drafter` in the registry (or `drafter` itself when it is already one)."""
    if not isinstance(drafter, str):
        return drafter
    factory = REGISTRY.get(drafter)
    if factory is None:
        raise ValueError(f"unknown drafter {drafter!r}; choose one of {', '.join(DRAFTERS)}")
    return factory(document_ids, **options)
