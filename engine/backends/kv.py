"""KV-cache session of the in-process HF backend: the one place that calls the model's forward.

``KVRunner`` implements ``engine.backends.base.Session``; ``LoadedModel.session()`` makes one.

A runner given a ``PrefixCache`` (engine.backends.prefix_cache) starts its first forward from
the longest cached prefix of those ids and stores them afterwards.

Every token the decoder commits goes through `KVRunner.feed`, which runs exactly one forward over
the given ids (a single token, a ride-along literal, or a whole copy span spliced by parallel
prefill) on top of the cache, and returns logits only for the positions the caller needs.
`crop` rolls the cache back (speculation rejected, end-of-gen overshoot). Cancellation is checked
before every forward (``EditCancelled``, engine.errors), so a cancelled edit stops within one forward.

Two optional capabilities beyond ``engine.backends.base.Session`` (callers test with ``hasattr``):

* ``feed_candidates(pending_ids, candidates, select)``: ONE forward over the pending ids followed by
  W candidate drafts side by side. A block-triangular 4D float mask lets each candidate's tokens see
  the cache, the pending ids and that candidate's earlier tokens only (never another candidate), and
  explicit position ids continue every candidate right after the pending ids, so each candidate's
  logits are those of feeding it alone. ``select`` picks the winner and how many of its tokens to
  keep; the cache then holds exactly pending + that prefix (the winner's K/V rows are gathered into
  place: no second forward). Used by ``engine.decode.verify.verify_candidates``.
* ``record_hidden(layer, site)`` / ``hidden_row(position)``: keep one decoder layer's hidden state per
  cached position (``engine.backends.hidden``; the copy-intent probe of ``engine.drafters.switchsd``).
  Off by default: forwards of a runner that does not record run no hook.
* ``prefill(ids, chunk)``: bring an empty session to ``ids`` in chunked forwards and keep them in the
  prefix cache (``engine.warmup``: the document's prompt computed before the instruction is known).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from typing import Callable

import torch

from engine.backends.hidden import HiddenRows, capture
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
        self.hidden: HiddenRows | None = None  # record_hidden(): one layer's rows per cached position
        self._captured = None                  # the recorded layer's rows of the forward just run

    @property
    def length(self) -> int:
        """Number of tokens currently in the cache."""
        return len(self.ids)

    @property
    def reused(self) -> int:
        """Prompt positions taken from the prefix cache instead of computed (a warm edit)."""
        return self.log.tokens_reused

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
        past = self.length
        out = self._forward(input_ids=input_ids, past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
        self.cache = out.past_key_values
        logits = out.logits[0, -keep:, :].float()
        self.ids.extend(ids)
        if first and self.prefix_cache is not None:
            self.prefix_cache.store(self.ids, [(layer.keys, layer.values) for layer in self.cache.layers])
        self._logged(ids, start, past)
        return logits

    def _forward(self, **inputs):
        """The model call; with ``record_hidden`` on, the recorded layer's rows are kept as ``_captured``."""
        if self.hidden is None:
            return self.model(**inputs)
        with capture(self.model, [self.hidden.layer], self.hidden.site) as got:
            out = self.model(**inputs)
        self._captured = got[self.hidden.layer][-1][0]
        return out

    def _logged(self, ids: list[int], start: float, past: int) -> None:
        """Book one finished forward of ``ids`` fed at cache position ``past`` (log, hidden rows, observers)."""
        self.log.forwards += 1
        self.log.tokens_fed += len(ids)
        self.log.sizes.append(len(ids))
        if self.hidden is not None:
            self.hidden.write(past, self._captured)
            self._captured = None
        if self.observers and self.device.type == "cuda":
            torch.cuda.synchronize()  # observers time the device work, not the launch
        elapsed = time.perf_counter() - start
        self.log.seconds += elapsed
        for observe in self.observers:
            observe(ids, elapsed * 1000.0)

    @torch.inference_mode()
    def feed_candidates(self, pending_ids: list[int], candidates: list[list[int]],
                        select: Callable[[list[torch.Tensor]], tuple[int, int]]) -> list[torch.Tensor]:
        """ONE forward over ``pending_ids`` + every candidate (block-triangular mask, see module doc).

        Returns, per candidate, its float32 logits rows: row 0 predicts the candidate's first token
        (the last pending position; absent when ``pending_ids`` is empty), row i+1 follows its token
        i. ``select(rows)`` returns ``(w, k)``: keep the first ``k`` tokens of candidate ``w``; the
        cache then holds the old cache + ``pending_ids`` + ``candidates[w][:k]``, nothing else.
        """
        if not candidates or any(not c for c in candidates):
            raise ValueError("feed_candidates() needs at least one candidate, none of them empty")
        if self.cancel is not None and self.cancel.is_set():
            raise EditCancelled(f"edit cancelled after {self.log.forwards} forwards")
        start = time.perf_counter()
        pending = list(pending_ids)
        first = not self.ids
        if first and self.prefix_cache is not None and pending:
            pending = self._resume_from_prefix(pending, 1)
        past, npend = self.length, len(pending)
        ids = pending + [t for c in candidates for t in c]
        group = torch.tensor([-1] * npend + [w for w, c in enumerate(candidates) for _ in c])
        offset = torch.tensor(list(range(npend)) + [npend + k for c in candidates for k in range(len(c))])
        n = len(ids)
        # row q may see column j (both among the new ids) when j <= q and j is pending or in q's own block
        allowed = torch.ones(n, n, dtype=torch.bool).tril() & ((group[None, :] == -1) | (group[None, :] == group[:, None]))
        dtype = next(self.model.parameters()).dtype
        mask = torch.zeros(1, 1, n, past + n, dtype=dtype)
        mask[0, 0, :, past:].masked_fill_(~allowed, torch.finfo(dtype).min)
        keep = n - npend + 1 if npend else n
        out = self._forward(
            input_ids=torch.tensor([ids], dtype=torch.long, device=self.device),
            attention_mask=mask.to(self.device),
            position_ids=(offset + past).unsqueeze(0).to(self.device),
            past_key_values=self.cache, use_cache=True, logits_to_keep=keep,
        )
        self.cache = out.past_key_values
        logits = out.logits[0, -keep:, :].float()
        shared = [logits[0]] if npend else []
        rows, at = [], 1 if npend else 0
        for c in candidates:
            rows.append(torch.stack(shared + list(logits[at:at + len(c)])))
            at += len(c)
        self.ids.extend(ids)
        w, k = select(rows)
        if not 0 <= w < len(candidates) or not 0 <= k <= len(candidates[w]):
            raise ValueError(f"select() returned ({w}, {k}) outside the {len(candidates)} candidates")
        lo = past + npend + sum(len(c) for c in candidates[:w])
        index = torch.cat([torch.arange(past + npend), torch.arange(lo, lo + k)])
        self._logged(ids, start, past)
        self._keep_positions(index)
        if first and self.prefix_cache is not None:
            self.prefix_cache.store(self.ids[:past + npend],
                                    [(layer.keys[:, :, :past + npend], layer.values[:, :, :past + npend])
                                     for layer in self.cache.layers])
        return rows

    def _keep_positions(self, index: torch.Tensor) -> None:
        """Keep only the cached positions ``index`` (ascending) in the KV cache, ``ids`` and hidden rows."""
        n = int(index.shape[0])
        if n and int(index[-1]) == n - 1:       # a plain prefix: an ordinary crop
            self.crop(n)
            return
        on_device = index.to(self.device)
        for layer in self.cache.layers:
            layer.keys = layer.keys.index_select(-2, on_device)
            layer.values = layer.values.index_select(-2, on_device)
        self.ids = [self.ids[i] for i in index.tolist()]
        if self.hidden is not None:
            self.hidden.select(index)

    def record_hidden(self, layer: int, site: str = "mid") -> None:
        """From the next forward on, keep ``layer``'s hidden state (at ``site``) for every cached position."""
        self.hidden = HiddenRows(layer, site)

    def hidden_row(self, position: int = -1) -> torch.Tensor | None:
        """The recorded hidden state of cache position ``position`` (default: the last), or None."""
        return None if self.hidden is None else self.hidden.row(position)

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

    @torch.inference_mode()
    def prefill(self, ids: list[int], *, chunk: int = 512) -> int:
        """Bring an empty session to exactly ``ids`` and keep them in the prefix cache; returns the
        positions computed (the rest came from the cache). Forwards of at most ``chunk`` tokens, each
        stored when done, so a cancel (checked before every forward) keeps what was computed."""
        if self.ids:
            raise ValueError("prefill() starts from an empty session")
        if self.prefix_cache is None:
            raise ValueError("prefill() needs a prefix cache to keep what it computes")
        if chunk < 1:
            raise ValueError("chunk must be positive")
        from transformers import DynamicCache

        hit = self.prefix_cache.lookup(ids, limit=len(ids))
        if hit is not None:
            self.cache = DynamicCache(hit.layers)
            self.ids = list(ids[:hit.length])
            self.log.tokens_reused += hit.length
        computed = 0
        while self.length < len(ids):
            part = ids[self.length:self.length + chunk]
            self.feed(part)  # an empty session's first feed looks the cache up again (a miss) and stores
            computed += len(part)
            self.prefix_cache.store(self.ids, [(layer.keys, layer.values) for layer in self.cache.layers])
        return computed

    def crop(self, length: int) -> None:
        """Drop cached tokens past `length` (no forward)."""
        if length < 0 or length > self.length:
            raise ValueError(f"crop({length}) outside cache of length {self.length}")
        if length < self.length:
            self.cache.crop(length - self.length)  # transformers 5: negative = tokens to drop
            del self.ids[length:]
        if self.hidden is not None:
            self.hidden.crop(length)


def warm_prefix(backend, ids: list[int], *, cancel: threading.Event | None = None, chunk: int = 256):
    """``Backend.warm_prefix`` of the in-process model: ``KVRunner.prefill`` into its prefix cache;
    returns an ``engine.backends.base.Prefilled`` (a cancel keeps the chunks computed before it)."""
    from engine.backends.base import Prefilled

    session = backend.session(cancel=cancel)
    cancelled = False
    try:
        session.prefill(ids, chunk=chunk)
    except EditCancelled:
        cancelled = True
    reused = session.log.tokens_reused
    return Prefilled(reused=reused, computed=session.length - reused, cancelled=cancelled)
