"""Prefix KV cache across edits: a prompt's shared beginning is not computed twice.

Editors edit the same document again and again, and every prompt starts with the same system
prompt; the document comes before the instruction (``engine.prompt``), so a second edit of the
same document shares everything up to its instruction, and an edit after an applied one shares
everything up to the first changed line. A session's FIRST forward is its prompt: the
``KVRunner`` asks this cache for the longest stored prefix of those ids, starts its KV cache
from it and feeds only the rest; after the forward it stores the prompt's keys and values.

Keyed by token ids, so a changed document or another model's prompt can only share the ids that
are really equal (a stale entry is never "hit"). Bounded: at most ``max_tokens`` cached
positions in all, least recently used entries evicted first; prompts shorter than
``min_tokens`` are not stored. Stored tensors are the session's own: ``DynamicCache`` only ever
replaces its tensors (``torch.cat`` on update, slicing on crop), never writes into them, so an
entry needs no copy and a restored session cannot change it.

The logits of the fed suffix can differ from a one-piece prompt forward in the last bits of
float arithmetic, exactly as a spliced copy span does; greedy decoding is unaffected except on
exact ties (the same caveat as every parallel-prefill path in this engine).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["PrefixCache", "PrefixHit"]


@dataclass
class PrefixHit:
    """What a lookup found: ``length`` cached positions and their per-layer (keys, values)."""

    length: int
    layers: list  # [(keys, values)] each [batch, heads, length, head_dim]


class PrefixCache:
    """LRU store of prompt KV states keyed by their token ids (thread-safe)."""

    def __init__(self, max_tokens: int = 8192, min_tokens: int = 32):
        if max_tokens < 1 or min_tokens < 1:
            raise ValueError("max_tokens and min_tokens must be positive")
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self._entries: OrderedDict[tuple[int, ...], list] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0           # lookups that reused at least min_tokens positions
        self.lookups = 0
        self.tokens_reused = 0

    @property
    def tokens(self) -> int:
        """Cached positions held now (the memory bound counts these)."""
        return sum(len(key) for key in self._entries)

    def lookup(self, ids: list[int], *, limit: int) -> PrefixHit | None:
        """The longest stored prefix of ``ids``, at most ``limit`` positions long (None: nothing useful)."""
        with self._lock:
            self.lookups += 1
            best_key, best = None, 0
            for key in self._entries:
                shared = _common_prefix(key, ids, min(len(key), limit))
                if shared > best:
                    best_key, best = key, shared
            if best_key is None or best < self.min_tokens:
                return None
            self._entries.move_to_end(best_key)
            layers = [(k[:, :, :best], v[:, :, :best]) for k, v in self._entries[best_key]]
            self.hits += 1
            self.tokens_reused += best
            return PrefixHit(best, layers)

    def peek(self, ids: list[int], *, limit: int) -> int:
        """How many positions ``lookup`` would reuse (0 below ``min_tokens``); counts and order unchanged."""
        with self._lock:
            best = max((_common_prefix(key, ids, min(len(key), limit)) for key in self._entries), default=0)
        return best if best >= self.min_tokens else 0

    def store(self, ids: list[int], layers: list) -> None:
        """Keep the KV state of the prompt ``ids`` (``layers``: per-layer (keys, values) of exactly those ids)."""
        if len(ids) < self.min_tokens or len(ids) > self.max_tokens:
            return
        key = tuple(ids)
        with self._lock:
            for old in [k for k in self._entries if len(k) <= len(key) and key[:len(k)] == k]:
                del self._entries[old]  # a prefix of the new prompt: the new entry covers it
            self._entries[key] = layers
            self._entries.move_to_end(key)
            while self.tokens > self.max_tokens:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _common_prefix(a, b, limit: int) -> int:
    n = 0
    for x, y in zip(a, b):
        if n >= limit or x != y:
            break
        n += 1
    return n
