"""Result and statistics types of the decoders (plain data, no torch).

``DecodeStats`` is THE counters type of every decoding loop: the program decoder
(``engine.decode.program``), free-text generation (``engine.decode.generate``) and full regeneration
(``engine.decode.regen``); benchmarks read these names. Counters a loop does not use stay 0
(regeneration has no masked steps, guessed headers or ops).

``DecodeResult``: the program, its resolved text (None when it does not resolve in strict mode,
with ``resolve_error``), warnings, ``output_ids`` (the committed output stream after
``<program>``) and its ``DecodeStats``; ``per_op`` is one ``OpRecord`` dict per op (kind, tokens by
kind, forwards attributed, ms). Progress callbacks receive ``DecodeStats.progress(ops)``
(``engine.types.Progress``) after every forward.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.types import Progress


@dataclass
class OpRecord:
    """Cost of one op: its output tokens by kind, forwards attributed to it, and wall time."""

    kind: str = "?"
    tokens: int = 0
    decoded: int = 0
    forced: int = 0
    copied: int = 0
    forwards: int = 0
    ms: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class DecodeStats:
    """Counters of one decode (program decoder, generation or regeneration alike)."""

    prompt_tokens: int = 0
    prompt_reused: int = 0      # of those, positions the session found in the prefix cache (a warm edit)
    decoded_tokens: int = 0     # chosen by the model (greedy, masked or verified from a gen-body draft)
    copied_tokens: int = 0      # program: spliced document tokens; regeneration: accepted draft tokens
    forced_tokens: int = 0      # grammar literals, or forced mode's target tokens
    forwards: int = 0           # Session.feed calls, prefill included
    masked_steps: int = 0       # program decoder: choices under an FSM mask
    mask_ms: float = 0.0        # CPU time of those choices
    guess_tokens: int = 0       # speculative op-header tokens fed
    guess_accepted: int = 0     # ... and kept
    draft_tokens: int = 0       # drafter tokens fed to a verify forward
    draft_accepted: int = 0     # ... and kept
    wall_ms: float = 0.0
    truncated: bool = False     # the token budget or the context window ended the output
    repeating: bool = False     # truncated because a gen kept repeating itself
    confidence: float | None = None   # program decoder: the least probability among the model's choices
    per_op: list[dict] = field(default_factory=list)

    @property
    def output_tokens(self) -> int:
        return self.decoded_tokens + self.copied_tokens + self.forced_tokens

    def progress(self, ops: int = 0) -> Progress:
        """The counters so far as the front door's ``Progress``."""
        return Progress(decoded=self.decoded_tokens, copied=self.copied_tokens, forced=self.forced_tokens,
                        forwards=self.forwards, ops=ops)


@dataclass
class DecodeResult:
    """The decoded program, its resolved text (None if it does not resolve) and the stats."""

    program: tuple
    text: str | None
    warnings: list[str]
    stats: DecodeStats
    output_ids: list[int]
    resolve_error: str | None = None
