"""Model-free planners: a pasted change that says exactly what the new text is is applied without the model.

The registry (``PLANNERS``), in order: the first planner that *claims* the instruction (it shows that
planner's format: a hunk header, a SEARCH marker; the snippet merger claims the rest) plans it or,
when the pasted change does not pin down one result that differs from the document, leaves it to
the model (``None``; a later planner never reads a format that is not its own: SEARCH/REPLACE blocks
are no snippet). The edit program of a planned edit is the oracle's program for its text
(`engine.edit`), so the editor gets the same minimal TextEdits as for a decoded edit. None of them
reads the instruction's prose.

* ``patch`` (`engine.program.patch`): a unified diff, placed by its context lines;
* ``search-replace`` (`engine.program.search_replace`): SEARCH/REPLACE blocks, each found once;
* ``snippet-merge`` (`engine.program.snippet`): a code snippet with ``... existing code ...``
  placeholders, merged by its anchor lines.

``request.snippet_merge`` (LSP ``snippetMerge``, CLI ``--no-snippet-merge``) turns all of them off.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from engine.program.patch import apply_patch, looks_like_diff
from engine.program.search_replace import apply_search_replace, has_markers
from engine.program.snippet import merge_snippet

__all__ = ["MODEL", "PLANNERS", "PastedPlanner", "plan_pasted", "planner_note"]

MODEL = "model"   # the planner name of an edit the strategy decoded


class PastedPlanner(NamedTuple):
    name: str                                  # ``stats.planner`` of the edits it plans
    note: str                                  # how front ends describe such an edit
    claims: Callable[[str], bool]              # instruction -> is it in this planner's format?
    plan: Callable[[str, str], str | None]     # (document, instruction) -> new text, or None


PLANNERS: tuple[PastedPlanner, ...] = (
    PastedPlanner("patch", "pasted diff applied by its context lines, no decoding", looks_like_diff, apply_patch),
    PastedPlanner("search-replace", "pasted SEARCH/REPLACE blocks applied, no decoding", has_markers,
                  apply_search_replace),
    PastedPlanner("snippet-merge", "pasted snippet merged by its anchors, no decoding", lambda _: True, merge_snippet),
)


def plan_pasted(document: str, instruction: str) -> tuple[str, str] | None:
    """``(planner name, new text)`` of the planner that claims the instruction, or None (the model decodes)."""
    planner = next(p for p in PLANNERS if p.claims(instruction))
    text = planner.plan(document, instruction)
    return None if text is None else (planner.name, text)


def planner_note(name: str) -> str | None:
    """The front-end note of a model-free planner's edit; None for ``model`` (or an unknown name)."""
    return next((p.note for p in PLANNERS if p.name == name), None)
