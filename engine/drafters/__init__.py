"""Speculative draft proposers for free-text decoding (lossless: output == greedy).

Registry: `make_proposer(name, ...)` builds one by name. Names: "none" (plain greedy),
"pld" (prompt lookup), "spec-edit" (document as draft, with re-anchoring).
"""
from __future__ import annotations

from engine.drafters.base import DraftProposer, NoDraft

__all__ = ["DraftProposer", "NoDraft", "PROPOSERS", "make_proposer"]

PROPOSERS = ("none", "pld", "spec-edit")


def make_proposer(name: str, *, document_ids: list[int] | None = None, **options) -> DraftProposer:
    """Build a proposer by registry name; `document_ids` is required by "spec-edit"."""
    if name == "none":
        return NoDraft()
    if name == "pld":
        from engine.drafters.pld import PromptLookupProposer

        return PromptLookupProposer(**options)
    if name == "spec-edit":
        from engine.drafters.document import DocumentDraftProposer

        if document_ids is None:
            raise ValueError("the 'spec-edit' proposer needs document_ids (the document's token ids)")
        return DocumentDraftProposer(document_ids, **options)
    raise ValueError(f"unknown proposer {name!r}; choose one of {', '.join(PROPOSERS)}")
