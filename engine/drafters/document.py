"""Speculative edits: the document itself is the draft (Cursor's speculative edits, EfficientEdit).

For a full regeneration of an edited document most output tokens are document tokens in order.
`DocumentDraftProposer` keeps a cursor into the expected output token sequence (the regen framing
around the unedited document). Each round it proposes the next `window` tokens after the cursor;
the verifier accepts the greedy-consistent prefix. While the output follows the document the
cursor simply advances. After a mismatch (the edit) it re-anchors: the last few output tokens
(`max_ngram` down to `min_ngram`) are matched against the document tokens, preferring the first
match at or after the old cursor, and drafting resumes after the match. No match: no draft (one
plain greedy step) until the output lines up with the document again.
"""
from __future__ import annotations

from engine.drafters.pld import find_ngram


class DocumentDraftProposer:
    """Drafts from `document_ids` (the expected output if nothing changed), with re-anchoring."""

    drafts_ahead = True  # its draft depends on ids only: a gen's first draft may ride with <gen> (engine.drafters.base)

    def __init__(self, document_ids: list[int], window: int = 32, max_ngram: int = 4, min_ngram: int = 2,
                 probe: int | None = None):
        if window < 1 or min_ngram < 1 or max_ngram < min_ngram or (probe is not None and probe < 1):
            raise ValueError(f"bad spec-edit options window={window} ngram={min_ngram}..{max_ngram} probe={probe}")
        self.doc = list(document_ids)
        self.window = window
        self.probe = probe
        self._size = window       # current draft length (changes only when probe is set)
        self._probe_size = probe  # draft length right after a re-anchor
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self._expect = 0          # doc index the next generated token should equal; None = lost
        self._seen = 0            # len(generated) when _expect was set
        self._draft_start = 0
        self._draft_len = 0
        self.reanchors = 0
        self._last = 0            # last known cursor: re-anchoring prefers matches after it

    def _anchor(self, generated: list[int]) -> int | None:
        """Doc index following the generated suffix, or None."""
        if not generated:
            return 0
        prefer = self._last
        for n in range(min(self.max_ngram, len(generated)), self.min_ngram - 1, -1):
            pos = find_ngram(self.doc, generated[-n:], prefer=max(0, prefer - n))
            if pos >= 0:
                return pos
        return None

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        cursor = None
        if self._expect is not None:
            # tokens generated since the cursor was set must equal the doc from the cursor
            new = generated[self._seen:]
            if self.doc[self._expect:self._expect + len(new)] == new:
                cursor = self._expect + len(new)
        if cursor is None:
            cursor = self._anchor(generated)
            self.reanchors += bool(generated)
            if self.probe is not None and generated:
                self._size = min(self._probe_size, self.window)
        self._expect = cursor
        self._seen = len(generated)
        if cursor is not None:
            self._last = cursor
        if cursor is None or cursor >= len(self.doc):
            self._draft_len = 0
            return []
        draft = self.doc[cursor:cursor + self._size]
        self._draft_start, self._draft_len = cursor, len(draft)
        return draft

    def update(self, accepted: int) -> None:
        if self._draft_len and self._expect is not None:
            self._expect = self._draft_start + accepted
            self._seen += accepted
            if self.probe is not None:
                if accepted == self._draft_len:
                    self._size = min(self.window, self._size * 2)
                self._probe_size = self.probe if accepted else max(1, self._probe_size // 2)
        self._draft_len = 0
