"""Result and statistics types of ``engine.decode.program.decode_program`` (plain data, no torch).

``DecodeResult``: the program, its resolved text (None when it does not resolve in strict mode,
with ``resolve_error``), warnings, ``output_ids`` (the committed output stream after
``<program>``) and ``DecodeStats``: decoded / copied / forced token counts, forwards, masked
steps and their CPU time, speculative-header and draft counters, wall time, ``truncated`` and
``per_op`` (one ``OpRecord`` dict per op: kind, tokens by kind, forwards attributed, ms).
The progress callback receives ``engine.types.Progress`` after every forward.
"""
from __future__ import annotations

from dataclasses import dataclass, field


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
    """Counters of one decode."""

    prompt_tokens: int = 0
    decoded_tokens: int = 0
    copied_tokens: int = 0
    forced_tokens: int = 0
    forwards: int = 0
    masked_steps: int = 0
    mask_ms: float = 0.0
    guess_tokens: int = 0
    guess_accepted: int = 0
    draft_tokens: int = 0
    draft_accepted: int = 0
    wall_ms: float = 0.0
    truncated: bool = False
    repeating: bool = False     # truncated because a gen kept repeating itself
    per_op: list[dict] = field(default_factory=list)

    @property
    def output_tokens(self) -> int:
        return self.decoded_tokens + self.copied_tokens + self.forced_tokens


@dataclass
class DecodeResult:
    """The decoded program, its resolved text (None if it does not resolve) and the stats."""

    program: tuple
    text: str | None
    warnings: list[str]
    stats: DecodeStats
    output_ids: list[int]
    resolve_error: str | None = None
