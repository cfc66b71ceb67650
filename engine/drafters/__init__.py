"""Speculative draft proposers for free-text decoding (lossless: output == greedy).

The drafter registry: ``REGISTRY`` maps a name to a factory ``(document_ids, **options) -> DraftProposer``;
``make_proposer(name, ...)`` builds one. Names: "none" (plain greedy), "pld" (prompt lookup),
"spec-edit" (the document as draft, with re-anchoring). A new drafter is a module in this package
implementing ``propose``/``update`` (``engine.drafters.base``) plus one registry line below; the
decoders verify whatever it proposes (``engine.decode.verify``).
"""
from __future__ import annotations

from typing import Callable

from engine.drafters.base import DraftProposer, NoDraft
from engine.drafters.document import DocumentDraftProposer
from engine.drafters.pld import PromptLookupProposer

__all__ = ["DraftProposer", "NoDraft", "REGISTRY", "PROPOSERS", "make_proposer"]


def _document(document_ids: list[int] | None, **options) -> DraftProposer:
    if document_ids is None:
        raise ValueError("the 'spec-edit' proposer needs document_ids (the document's token ids)")
    return DocumentDraftProposer(document_ids, **options)


REGISTRY: dict[str, Callable[..., DraftProposer]] = {
    "none": lambda document_ids, **options: NoDraft(),
    "pld": lambda document_ids, **options: PromptLookupProposer(**options),
    "spec-edit": _document,
}
PROPOSERS = tuple(REGISTRY)


def make_proposer(name: str, *, document_ids: list[int] | None = None, **options) -> DraftProposer:
    """Build a proposer by registry name; `document_ids` is required by "spec-edit"."""
    factory = REGISTRY.get(name)
    if factory is None:
        raise ValueError(f"unknown proposer {name!r}; choose one of {', '.join(PROPOSERS)}")
    return factory(document_ids, **options)
