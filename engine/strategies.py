"""The strategy registry: the ONE list of edit strategies every front end offers (torch-free).

A strategy says how an edit is produced; `engine.edit` dispatches on its `family`:

* ``program``: the model writes an edit program (`engine.decode.program`); `token_level` programs copy
  document tokens (``<copy tokens="a-b"/>``) instead of lines and resolve in token granularity.
* ``regen``: the model regenerates the whole document (`engine.decode.regen`), optionally with a
  speculative `drafter` (`engine.drafters`); the output is identical to plain greedy regeneration.
* ``auto``: per request, one of the strategies above, the one predicted to finish first on this model
  and machine (`engine.picker`: a calibrated cost model of the document's shape); the result names it.

Front ends read their choices from here (through `engine.api.STRATEGIES`): the LSP settings and
``cad-lsp --strategy``, ``cad-apply``, ``cad-bench`` and ``cad-demo``. A new strategy is one entry below.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.errors import UnknownStrategyError

__all__ = ["Strategy", "REGISTRY", "STRATEGIES", "get_strategy"]


@dataclass(frozen=True)
class Strategy:
    """One registered strategy (see module doc)."""

    name: str
    family: str                  # "program" | "regen" | "auto"
    summary: str
    token_level: bool = False    # program copies are token ranges (resolve with granularity "tokens")
    drafter: str = "none"        # regen only: the engine.drafters name that drafts the output

    @property
    def granularity(self) -> str:
        """How the strategy's programs resolve: ``"tokens"`` or ``"lines"``."""
        return "tokens" if self.token_level else "lines"


REGISTRY: dict[str, Strategy] = {s.name: s for s in (
    Strategy("cad", "program", "Copy-as-Decode: an edit program of line copies and gens"),
    Strategy("cad-tokens", "program", "Copy-as-Decode with token-range copies", token_level=True),
    Strategy("regen", "regen", "greedy full regeneration of the document"),
    Strategy("spec-edit", "regen", "full regeneration with the document as the speculative draft "
             "(same output as regen, fewer forwards)", drafter="spec-edit"),
    Strategy("auto", "auto", "per request, cad or spec-edit, whichever this model and machine should finish "
             "first (a calibrated cost model; cad for weights trained on edit programs only)"),
)}

STRATEGIES: tuple[str, ...] = tuple(REGISTRY)


def get_strategy(name: str) -> Strategy:
    """The registered strategy called `name`; raises UnknownStrategyError (names the choices)."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownStrategyError(
            f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}") from None
