"""Prompt lookup decoding (PLD): draft by suffix-matching the output against the context.

Saxena (2023) / HF transformers' `PromptLookupCandidateGenerator`: take the last n generated
tokens (n from `max_ngram` down to `min_ngram`), find an earlier occurrence in prompt + output,
and propose the `window` tokens that followed it. Generic (knows nothing about documents);
lossless when verified with `engine.decode.verify.verify_greedy`.
"""
from __future__ import annotations

from engine.drafters.base import joined


def find_ngram(haystack: list[int], needle: list[int], *, end: int | None = None, prefer: int = 0) -> int:
    """Index just after an occurrence of `needle` in `haystack[:end]`, or -1.

    Among several occurrences the first one starting at or after `prefer` wins; otherwise the
    last one before it (documents are mostly consumed left to right).
    """
    n = len(needle)
    limit = len(haystack) if end is None else end
    if n == 0 or n > limit:
        return -1
    first = needle[0]
    before = -1
    i = 0
    while True:
        try:
            i = haystack.index(first, i, limit - n + 1)
        except ValueError:
            return before
        if haystack[i:i + n] == needle:
            if i >= prefer:
                return i + n
            before = i + n
        i += 1


class PromptLookupProposer:
    """Proposes the continuation of the latest n-gram's earlier occurrence in prompt + output."""

    drafts_ahead = True  # its draft depends on ids only: a gen's first draft may ride with <gen> (engine.drafters.base)

    def __init__(self, window: int = 16, max_ngram: int = 3, min_ngram: int = 1):
        if window < 1 or min_ngram < 1 or max_ngram < min_ngram:
            raise ValueError(f"bad PLD options window={window} ngram={min_ngram}..{max_ngram}")
        self.window = window
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        tokens = joined(context_ids, generated)
        for n in range(min(self.max_ngram, len(generated)), self.min_ngram - 1, -1):
            suffix = tokens[-n:]
            # search everything before the suffix itself
            start = find_ngram(tokens, suffix, end=len(tokens) - 1)
            if start >= 0:
                draft = tokens[start:start + self.window]
                if draft:
                    return draft
        return []

    def update(self, accepted: int) -> None:
        return None
