"""The backend interface: what a decoder needs from a model, and nothing more.

A ``Backend`` (the in-process Hugging Face model, ``engine.backends.model.LoadedModel``; a remote
serving engine could implement the same) provides the tokenizer, the context length, the prompt
profile its weights expect, and fresh KV ``Session``s. A ``Session`` is one sequence in the KV
cache: ``feed`` runs exactly ONE forward over the given ids on top of the cache and returns the
logits of the last ``keep`` positions; ``crop`` rolls the cache back (a rejected draft, an
end-of-gen overshoot). ``feed`` raises ``engine.errors.EditCancelled`` before the forward once the
session's cancel event is set. Decoders (``engine.decode``) only ever talk to a ``Session``.

Optional session capabilities, NOT part of the protocol (a backend may lack them; callers test with
``hasattr`` and fall back): ``feed_candidates(pending_ids, candidates, select)``, one forward verifying
several alternative drafts (``engine.decode.verify.verify_candidates``; without it only the first
candidate is verified), and ``record_hidden(layer, site)`` / ``hidden_row(position)``, one layer's
hidden state per cached position (the copy-intent probe of ``engine.drafters.switchsd``; without it
that drafter gates on context matches alone). The in-process HF session (``engine.backends.kv``) has both.

Optional backend capability: ``warm_prefix(ids, *, cancel, chunk) -> Prefilled`` computes a prompt's
beginning ahead of an edit and keeps it where the backend's next session of those ids will find it
(``engine.warmup``), with ``warm_capacity`` the most ids it can keep (0: it keeps none). The in-process
model keeps them in its prefix cache (``engine.backends.kv.warm_prefix``); a remote backend sends a
one-token completion, so the serving engine's own prefix cache holds them.

Observing forwards (benchmarks, tests): append a ``ForwardObserver`` to ``backend.observers``; every
session calls it after each forward with the ids fed and the forward's wall time in ms (device
work finished), instead of anyone patching the session class.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

# observer(ids fed in this forward, wall ms of the forward)
ForwardObserver = Callable[[list, float], None]


@dataclass
class Prefilled:
    """What ``warm_prefix`` did: positions found cached, positions computed, whether a cancel stopped it."""

    reused: int
    computed: int
    cancelled: bool = False


@runtime_checkable
class Session(Protocol):
    """One sequence's KV cache on a backend."""

    ids: list[int]          # the token ids in the cache, in order

    @property
    def length(self) -> int: ...

    @property
    def reused(self) -> int:
        """Prompt positions taken from a prefix cache instead of computed (0 without one)."""
        ...

    def feed(self, ids: list[int], keep: int = 1) -> Any:
        """ONE forward over ``ids``; float logits of the last ``keep`` positions, shape [keep, vocab]."""
        ...

    def crop(self, length: int) -> None:
        """Drop cached tokens past ``length`` (no forward)."""
        ...


@runtime_checkable
class Backend(Protocol):
    """A model the engine can decode with."""

    tokenizer: Any
    context_length: int
    prompt_profile: str
    observers: list

    def session(self, *, cancel: threading.Event | None = None) -> Session:
        """A fresh, empty KV session (one edit's decode)."""
        ...
