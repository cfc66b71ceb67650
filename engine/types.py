"""Plain data the engine's front door takes and gives (torch-free): request, progress, stats, result.

    EditRequest(document, instruction, strategy="cad", line_range=None, max_new_tokens=None, mode="clipped",
                gen_drafter=None, snippet_merge=True)
    Progress(decoded, copied, forced, forwards, ops)        # after every forward
    EditStats(...)                                          # what the edit cost
    EditResult(program, text, stats, warnings)              # program lines refer to the FULL document

``MODES`` (the resolver's ``strict`` | ``clipped``) is defined once, in ``engine.program.resolver``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.program.resolver import MODES

__all__ = ["MODES", "EditRequest", "Progress", "EditStats", "EditResult"]


@dataclass(frozen=True)
class EditRequest:
    """One edit: apply `instruction` to `document` (optionally only to lines `line_range`)."""

    document: str
    instruction: str
    strategy: str = "cad"
    line_range: tuple[int, int] | None = None   # 1-based inclusive; only these lines are edited
    max_new_tokens: int | None = None         # None: auto (the edited text's tokens + a margin)
    mode: str = "clipped"
    gen_drafter: str | None = None            # engine.drafters name drafting cad gen bodies; None: the engine's
    snippet_merge: bool = True                # a pasted change that pins down the new text (diff, SEARCH/REPLACE,
                                              # anchored snippet) is applied without the model (engine.program.pasted);
                                              # False: the strategy always decodes


@dataclass
class Progress:
    """Counts so far, reported after every forward (decoders and regeneration alike)."""

    decoded: int
    copied: int
    forced: int
    forwards: int
    ops: int


@dataclass
class EditStats:
    """What the edit cost. `speedup_estimate` = estimated regen forwards / actual forwards (1.0 when
    nothing was decoded: a model-free planner claims no speedup)."""

    decoded_tokens: int
    copied_tokens: int
    forced_tokens: int
    forwards: int
    ops: int
    prompt_tokens: int
    wall_ms: float
    per_op: list[dict] = field(default_factory=list)
    truncated: bool = False
    speedup_estimate: float = 1.0
    budget: int = 0            # the max_new_tokens this edit ran with (auto budgets resolved)
    planner: str = "model"     # who wrote the program: "model" (the strategy decoded it) or a model-free
                               # planner of engine.program.pasted ("patch", "search-replace", "snippet-merge")
    prompt_reused: int = 0     # prompt positions found in the prefix cache (warm edit; remote: the server's report)
    picked: str = ""           # strategy "auto": the strategy it ran ("" for any other strategy; engine.picker)
    predicted_ms: dict = field(default_factory=dict)  # strategy "auto": each candidate's predicted wall ms
    confidence: float | None = None   # cad / cad-tokens in process: the least probability the model gave any
                                      # token it chose (None: nothing chosen, or not measured); a low one warns


@dataclass
class EditResult:
    """The program (full-document line numbers), the new text, stats and resolver warnings."""

    program: tuple
    text: str
    stats: EditStats
    warnings: list[str] = field(default_factory=list)
