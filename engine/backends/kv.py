"""KV-cache session of the in-process HF backend: the one place that calls the model's forward.

``KVRunner`` implements ``engine.backends.base.Session``; ``LoadedModel.session()`` makes one.

A runner given a ``PrefixCache`` (engine.backends.prefix_cache) starts its first forward from
the longest cached prefix of those ids and stores them afterwards.

Every token the decoder commits goes through `KVRunner.feed`, which runs exactly one forward over
the given ids (a single token, a ride-along literal, or a whole copy span spliced by parallel
prefill) on top of the cache, and returns logits only for the positions the caller needs.
`crop` rolls the cache back (speculation rejected, end-of-gen overshoot). Cancellation is checked
before every forward (``EditCancelled``, engine.errors), so a cancelled edit stops within one forward.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import torch

from engine.errors import EditCancelled


@dataclass
class ForwardLog:
    """Counts and wall time of the forwards a runner has executed."""

    forwards: int = 0
    tokens_fed: int = 0
    seconds: float = 0.0
    sizes: list[int] = field(default_factory=list)
    tokens_reused: int = 0  # prompt positions taken from the prefix cache instead of computed


class KVRunner:
    """Owns a DynamicCache over one sequence and feeds token ids through the model."""

    def __init__(self, model, *, cancel: threading.Event | None = None, observers=(), prefix_cache=None):
        from transformers import DynamicCache

        self.model = model
        self.prefix_cache = prefix_cache  # engine.backends.prefix_cache.PrefixCache, consulted on the first feed
        self.device = next(model.parameters()).device
        self.cache = DynamicCache()
        self.cancel = cancel
        self.observers = observers  # ForwardObserver callbacks (engine.backends.base), called after each forward
        self.log = ForwardLog()
        self.ids: list[int] = []

    @property
    def length(self) -> int:
        """Number of tokens currently in the cache."""
        return len(self.ids)

    @torch.inference_mode()
    def feed(self, ids: list[int], keep: int = 1) -> torch.Tensor:
        """One forward over `ids`; returns float32 logits of the last `keep` positions, shape [keep, V]."""
        if not ids:
            raise ValueError("feed() needs at least one token id")
        if self.cancel is not None and self.cancel.is_set():
            raise EditCancelled(f"edit cancelled after {self.log.forwards} forwards")
        keep = max(1, min(keep, len(ids)))
        start = time.perf_counter()
        first = not self.ids
        if first and self.prefix_cache is not None:
            ids = self._resume_from_prefix(ids, keep)
        input_ids = torch.tensor([ids], dtype=torch.long, device=self.device)
        out = self.model(
            input_ids=input_ids,
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=keep,
        )
        self.cache = out.past_key_values
        logits = out.logits[0, -keep:, :].float()
        self.ids.extend(ids)
        self.log.forwards += 1
        self.log.tokens_fed += len(ids)
        self.log.sizes.append(len(ids))
        if first and self.prefix_cache is not None:
            self.prefix_cache.store(self.ids, [(layer.keys, layer.values) for layer in self.cache.layers])
        if self.observers and self.device.type == "cuda":
            torch.cuda.synchronize()  # observers time the device work, not the launch
        elapsed = time.perf_counter() - start
        self.log.seconds += elapsed
        for observe in self.observers:
            observe(ids, elapsed * 1000.0)
        return logits

    def _resume_from_prefix(self, ids: list[int], keep: int) -> list[int]:
        """Start the cache from the longest cached prefix of ``ids``; returns the ids still to feed."""
        from transformers import DynamicCache

        hit = self.prefix_cache.lookup(ids, limit=len(ids) - keep)
        if hit is None:
            return ids
        self.cache = DynamicCache(hit.layers)
        self.ids = list(ids[:hit.length])
        self.log.tokens_reused += hit.length
        return ids[hit.length:]

    def crop(self, length: int) -> None:
        """Drop cached tokens past `length` (no forward)."""
        if length < 0 or length > self.length:
            raise ValueError(f"crop({length}) outside cache of length {self.length}")
        if length < self.length:
            self.cache.crop(length - self.length)  # transformers 5: negative = tokens to drop
            del self.ids[length:]
