"""The replaced document lines as the draft of a gen body (issue 11, item 1), then prompt lookup.

A ``<gen>`` rewrites the document lines that follow the last copied line, and a rewritten line
usually keeps most of its tokens. ``ReplacedLinesProposer`` keeps a cursor into ``document_ids``
(the document's token ids) and drafts the ``window`` tokens after it:

* the program decoder says where a gen starts (``begin_gen(replaced_ids)``: the ids a gen would have
  if it rewrote the lines after the last copy unchanged, tokenized the way a gen body is): the draft
  source is then those ids, from their start. Without that call (full regeneration, other loops) the
  source is ``document_ids`` and the cursor is placed after the last document text in the context
  (a line copy splices the copied lines into the output, so the context just before ``<gen>`` ends
  with document text): the document position whose preceding tokens agree longest with the
  context's tail (an index of ``anchor_ngram``-grams over the tail's last ``tail`` tokens); no
  anchor: the document's start;
* while the gen's tokens equal the source after the cursor, the cursor advances with them;
* after a difference (the edit inside the line) the model's token is located in the source: the
  token after the rejected one (the edit deleted a token), else the last ``max_ngram`` ..
  ``min_ngram`` generated tokens (preferring a match at or after the last cursor), else the token
  after the rejected one is assumed replaced (a substituted token: the line usually goes on as
  before, e.g. ``< 0:`` becoming ``== 0:``), once per difference;
* no source match: prompt lookup (``engine.drafters.pld``) over the context and the gen so far.

Lossless like every drafter: the decoding loop verifies the draft (``engine.decode.verify``).
"""
from __future__ import annotations

from engine.drafters.pld import PromptLookupProposer, find_ngram


class ReplacedLinesProposer:
    """Drafts a gen body from the document text it replaces, else by prompt lookup."""

    drafts_ahead = True  # its draft depends on ids only: a gen's first draft may ride with <gen> (engine.drafters.base)

    def __init__(self, document_ids: list[int], window: int = 16, max_ngram: int = 4, min_ngram: int = 2,
                 anchor_ngram: int = 3, tail: int = 24):
        if window < 1 or min_ngram < 1 or max_ngram < min_ngram or anchor_ngram < 1 or tail < anchor_ngram:
            raise ValueError(f"bad replaced-lines options window={window} ngram={min_ngram}..{max_ngram} "
                             f"anchor_ngram={anchor_ngram} tail={tail}")
        self.document = list(document_ids)
        self.doc = self.document       # the draft source: the document, or the ids a gen replaces
        self.window, self.max_ngram, self.min_ngram = window, max_ngram, min_ngram
        self.anchor_ngram, self.tail = anchor_ngram, tail
        self.fallback = PromptLookupProposer(window=window)
        self._index: dict[tuple[int, ...], list[int]] = {}
        for end in range(anchor_ngram, len(self.doc) + 1):
            self._index.setdefault(tuple(self.doc[end - anchor_ngram:end]), []).append(end)
        self._cursor: int | None = 0   # source index the next generated token should equal; None = lost
        self._seen = 0                 # len(generated) when the cursor was set
        self._last = 0                 # last known cursor: re-anchoring prefers matches after it
        self._draft = None             # (cursor, length) of the last source draft
        self._started = False          # begin_gen placed the cursor for the gen about to start
        self._rejected: int | None = None  # source index of the draft token the model last rejected
        self._substituted = False      # the cursor was last placed by assuming a substituted token

    def begin_gen(self, replaced_ids: list[int]) -> None:
        """A gen starts; ``replaced_ids`` are the ids it would have if it kept the lines it replaces."""
        self.doc = list(replaced_ids) if replaced_ids else self.document
        self._cursor, self._seen, self._last, self._draft = 0, 0, 0, None
        self._started, self._rejected, self._substituted = bool(replaced_ids), None, False

    def _gen_start(self, context: list[int]) -> int:
        """Doc index after the document text that ends the context (0 when there is none)."""
        best, best_len = 0, 0
        n = self.anchor_ngram
        for end in range(len(context), max(n, len(context) - self.tail) - 1, -1):
            for pos in self._index.get(tuple(context[end - n:end]), ()):
                k = n
                while k < pos and k < end and k < 64 and self.doc[pos - 1 - k] == context[end - 1 - k]:
                    k += 1
                if k > best_len:
                    best, best_len = pos, k
        return best

    def _reanchor(self, generated: list[int]) -> int | None:
        rejected, self._rejected = self._rejected, None
        if rejected is not None and rejected + 1 < len(self.doc) and generated[-1] == self.doc[rejected + 1]:
            return rejected + 2                      # the edit deleted the rejected token
        for n in range(min(self.max_ngram, len(generated)), self.min_ngram - 1, -1):
            pos = find_ngram(self.doc, generated[-n:], prefer=max(0, self._last - n))
            if pos >= 0:
                return pos
        if rejected is not None and rejected + 1 < len(self.doc) and not self._substituted:
            self._substituted = True                 # a substituted token: the source goes on after it
            return rejected + 1                      # (not twice in a row: new text is not a substitution)
        return None

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        context = list(context_ids)
        if generated and context[-len(generated):] == list(generated):
            context = context[:-len(generated)]     # callers may pass the gen already appended
        if self._started and not generated:          # begin_gen placed the cursor at the source's start
            cursor = 0
        elif not generated or len(generated) < self._seen:   # a new gen (or a new decode) starts
            self.doc, self._started = self.document, False
            cursor = self._gen_start(context)
        elif self._cursor is not None and \
                generated[self._seen:] == self.doc[self._cursor:self._cursor + len(generated) - self._seen]:
            cursor = self._cursor + len(generated) - self._seen
        else:
            cursor = self._reanchor(generated)
        self._cursor, self._seen, self._draft = cursor, len(generated), None
        if cursor is not None:
            self._last = cursor
            draft = self.doc[cursor:cursor + self.window]
            if draft:
                self._draft = (cursor, len(draft))
                return draft
        return self.fallback.propose(context, generated)

    def update(self, accepted: int) -> None:
        if self._draft is not None:
            cursor, length = self._draft
            self._cursor, self._seen = cursor + accepted, self._seen + accepted
            self._rejected = cursor + accepted if accepted < length else None
            self._substituted = self._substituted and not accepted
        self._draft = None
