"""Warm-up: compute a document's prompt before the instruction is known, so its edit starts warm.

Every prompt shows the document before the instruction (``engine.prompt``), so the part of the
prompt up to the instruction depends on the document and the strategy only. ``warm_document``
computes its KV ahead (the backend's ``warm_prefix``: chunked forwards into the in-process prefix
cache, ``engine.backends.prefix_cache``, or one one-token request to a serving engine, whose own
prefix cache keeps it); an edit of the same text afterwards prefills only its
instruction (and an edit of a changed text reuses everything up to the first changed line).
Editors call this when a document has been left alone for a moment (``cad_lsp.warmup``): the
prefill, most of a cold edit's time on a long document on CPU, is then paid while the user reads.

The instruction-free prefix is found by rendering the strategy's prompt with two instructions that
differ from their first character and keeping the ids the two share: whatever the tokenizer does
at the boundary, those ids are exactly the start of any real prompt of this document.

For strategy ``auto`` the prompt warmed is the one of the strategy ``engine.picker`` would pick once
that prompt is cached (``auto_warm_strategy``).

Nothing changes what an edit decodes: a warm edit feeds the cached keys and values instead of
recomputing them (the prefix cache's caveat applies: the last bits of float arithmetic may differ
from a one-piece prefill, as with every spliced span). Torch is imported only through the model.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from engine.errors import EngineError
from engine.strategies import get_strategy

__all__ = ["WarmResult", "auto_warm_strategy", "instruction_free_prefix", "warm_document", "WARM_CHUNK_TOKENS"]

WARM_CHUNK_TOKENS = 256     # tokens per forward: a cancel (an edit arriving) waits at most one chunk
_PROBES = ("a", "Z")        # two instructions whose prompts differ from the instruction's first character
_CHARS_PER_TOKEN_MAX = 16   # a document longer than this many characters per cacheable token is skipped untokenized


@dataclass
class WarmResult:
    """What a warm-up did: ``status`` is "warm", "cancelled", "skipped" or "failed" (``reason`` says why)."""

    status: str
    prompt_tokens: int = 0   # ids of the instruction-free prefix
    reused: int = 0          # of those, found in the prefix cache already
    computed: int = 0        # of those, computed now
    seconds: float = 0.0
    reason: str = ""

    def describe(self) -> str:
        if self.status in ("skipped", "failed"):
            return f"warm-up {self.status}: {self.reason}"
        done = f"{self.reused + self.computed}/{self.prompt_tokens} prompt tokens cached"
        return (f"warm-up {self.status}: {done} ({self.computed} computed, {self.reused} reused) "
                f"in {self.seconds:.2f} s")


def _render(loaded, document: str, instruction: str, strategy) -> list[int]:
    from engine.prompt import render_prompt, render_regen_prompt

    if strategy.family == "regen":
        return render_regen_prompt(document, instruction, loaded.tokenizer).ids
    return render_prompt(document, instruction, loaded.tokenizer, token_level=strategy.token_level,
                         profile=getattr(loaded, "prompt_profile", "teach")).ids


def instruction_free_prefix(loaded, document: str, strategy: str = "cad") -> list[int]:
    """The prompt ids every edit of ``document`` with ``strategy`` starts with, whatever its instruction."""
    chosen = get_strategy(strategy)
    first, second = (_render(loaded, document, probe, chosen) for probe in _PROBES)
    n = 0
    for a, b in zip(first, second):
        if a != b:
            break
        n += 1
    return first[:n]


def auto_warm_strategy(loaded, document: str, *, window: int = 32, candidates: tuple[str, ...] | None = None) -> str:
    """The strategy whose prompt a warm-up for ``auto`` computes: the one ``engine.picker`` would pick
    once that strategy's instruction-free prompt is cached; ``candidates``: instead of the weights' own
    (``engine.picker.candidates_for``; benchmarks)."""
    from engine import picker

    allowed = candidates or picker.candidates_for(loaded)[0]
    if len(allowed) == 1:
        return allowed[0]
    cost = picker.calibrate(loaded)
    warm = {name: picker.predict(loaded, document, _PROBES[0], window=window, cost=cost, assume_cached={
        name: len(instruction_free_prefix(loaded, document, name))})[name] for name in allowed}
    return picker.choose(warm)


def warm_document(loaded, document: str, strategy: str = "cad", *, cancel: threading.Event | None = None,
                  chunk_tokens: int = WARM_CHUNK_TOKENS, window: int = 32) -> WarmResult:
    """Prefill the instruction-free prompt of ``document`` where ``loaded``'s next edit will find it
    (module doc): the in-process model's prefix cache, or a serving engine's (``Backend.warm_prefix``).

    Skips (never raises for it) when the backend keeps no prefix (the in-process cache turned off),
    or when the prompt could not be kept or edited whole (longer than the backend keeps, or than the
    context window with a copy of the document). A set ``cancel`` stops it between forwards; what was
    computed by then stays cached. A serving engine's error is reported as status "failed".
    ``window``: spec-edit's draft size, which strategy ``auto``'s choice of prompt weighs."""
    start = time.perf_counter()
    capacity = int(getattr(loaded, "warm_capacity", 0) or 0)
    if not capacity or not hasattr(loaded, "warm_prefix"):
        return WarmResult("skipped", reason="this model keeps no prefix cache")
    if len(document) > capacity * _CHARS_PER_TOKEN_MAX:
        return WarmResult("skipped", reason=f"the document ({len(document)} characters) is longer than the "
                                            f"model keeps ({capacity} prompt tokens)")
    try:
        document.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the edit itself refuses such text with a clear error
        return WarmResult("skipped", reason="the document is not valid Unicode")
    if get_strategy(strategy).family == "auto":  # the prompt of the strategy auto would then pick
        strategy = auto_warm_strategy(loaded, document, window=window)
    ids = instruction_free_prefix(loaded, document, strategy)
    if len(ids) > capacity:
        return WarmResult("skipped", prompt_tokens=len(ids),
                          reason=f"its prompt ({len(ids)} tokens) is longer than the model keeps ({capacity} tokens)")
    doc_tokens = len(loaded.tokenizer.encode(document, add_special_tokens=False))
    if len(ids) + doc_tokens > int(loaded.context_length):
        return WarmResult("skipped", prompt_tokens=len(ids),
                          reason="the document does not fit the context window whole (edit a line range)")
    try:
        done = loaded.warm_prefix(ids, cancel=cancel, chunk=chunk_tokens)
    except EngineError as exc:  # a serving engine down or refusing: the edit will say so itself
        return WarmResult("failed", prompt_tokens=len(ids), seconds=time.perf_counter() - start,
                          reason=f"{type(exc).__name__}: {exc}")
    return WarmResult("cancelled" if done.cancelled else "warm", prompt_tokens=len(ids), reused=done.reused,
                      computed=done.computed, seconds=time.perf_counter() - start)
