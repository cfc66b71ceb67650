"""A toy language model and a Session over it, for drafter and verifier tests without torch models.

``NgramLM`` predicts from a bigram table of a text (else a hash of the last 3 tokens); ``FakeRunner``
implements the backend ``Session`` interface (``feed`` returns one-hot logits rows, ``crop``
truncates); ``edited`` applies a few random substitutions, deletions and insertions to a document.
"""
from __future__ import annotations

import random

import torch

VOCAB = 50


class NgramLM:
    """A deterministic toy LM: next token = table[(t[-2], t[-1])] or a hash of the last 3 tokens."""

    def __init__(self, text_ids: list[int], seed: int):
        self.table = {(a, b): c for a, b, c in zip(text_ids, text_ids[1:], text_ids[2:])}
        self.seed = seed

    def next(self, seq: list[int]) -> int:
        key = tuple(seq[-2:])
        if key in self.table:
            return self.table[key]
        return hash((self.seed, tuple(seq[-3:]))) % VOCAB


class FakeRunner:
    """KVRunner's interface over NgramLM: feed returns one-hot logits, crop truncates."""

    def __init__(self, lm: NgramLM):
        self.lm = lm
        self.ids: list[int] = []
        self.forwards = 0
        self.reused = 0      # no prefix cache

    @property
    def length(self) -> int:
        return len(self.ids)

    def feed(self, ids, keep=1):
        self.ids.extend(ids)
        self.forwards += 1
        rows = []
        for end in range(len(self.ids) - keep + 1, len(self.ids) + 1):
            row = torch.zeros(VOCAB)
            row[self.lm.next(self.ids[:end])] = 1.0
            rows.append(row)
        return torch.stack(rows)

    def crop(self, length):
        assert 0 <= length <= len(self.ids)
        del self.ids[length:]


def edited(doc: list[int], rng: random.Random) -> list[int]:
    out = list(doc)
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(out))
        kind = rng.choice(["sub", "del", "ins"])
        if kind == "sub":
            out[i] = rng.randrange(VOCAB)
        elif kind == "del" and len(out) > 2:
            del out[i]
        else:
            out.insert(i, rng.randrange(VOCAB))
    return out
