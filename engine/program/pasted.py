"""Model-free planners: a pasted change that says exactly what the new text is is applied without the model.

The registry (``PLANNERS``), in order: the first planner that *claims* the instruction (it shows that
planner's format: a hunk header, a SEARCH marker; the snippet merger claims the rest) plans it. When
the pasted change does not pin down one result that differs from the document (``text`` None, with
the ``reason``), an *exact* format (a diff, SEARCH/REPLACE blocks) is refused: the edit fails with
that reason and changes nothing (`engine.edit` raises ``PastedChangeError``; a diff for other files,
or one whose context is stale, is not the model's to improvise); a snippet, whose format is loose, is
left to the model, and the edit's warnings say why. A later planner never reads a format that is
not its own: SEARCH/REPLACE blocks are no snippet. The edit program of a planned edit is the oracle's program for its text
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

from engine.program.pasted_text import NoPlan
from engine.program.patch import looks_like_diff, plan_patch
from engine.program.search_replace import has_markers, plan_search_replace
from engine.program.snippet import plan_snippet

__all__ = ["MODEL", "PLANNERS", "PastedPlan", "PastedPlanner", "plan_pasted", "planner_note"]

MODEL = "model"   # the planner name of an edit the strategy decoded


class PastedPlanner(NamedTuple):
    name: str                                  # ``stats.planner`` of the edits it plans
    what: str                                  # what the user pasted, for messages ("diff")
    note: str                                  # how front ends describe such an edit
    claims: Callable[[str], bool]              # instruction -> is it in this planner's format?
    plan: Callable[[str, str], str | None]     # (document, instruction) -> new text; None or NoPlan: no plan
    exact: bool                                # an exact format: what does not fit is an error, not the model's


class PastedPlan(NamedTuple):
    planner: str
    text: str | None      # None: the pasted change does not pin down one result; the model decodes
    reason: str = ""      # why not, when the planner can say (the edit's warnings show it)

    @property
    def _planner(self) -> PastedPlanner:
        return next(p for p in PLANNERS if p.name == self.planner)

    @property
    def refused(self) -> bool:
        """An exact format (a diff, SEARCH/REPLACE blocks) that does not fit: the edit is an error."""
        return self.text is None and self._planner.exact

    def refusal(self) -> str:
        return (f"the pasted {self._planner.what} could not be applied as is: {self.reason}. Nothing was changed. "
                f"Fix the paste, or turn snippet merging off (setting snippetMerge = false, --no-snippet-merge) "
                f"to have the model decode it as an instruction")

    def declined_warning(self) -> str | None:
        """A snippet that did not merge (the model decoded it): why, when the merger can say; else None."""
        if self.text is not None or not self.reason or self.refused:
            return None
        return (f"the pasted {self._planner.what} could not be applied as is: {self.reason}; "
                f"the model decoded the instruction instead")


PLANNERS: tuple[PastedPlanner, ...] = (
    PastedPlanner("patch", "diff", "pasted diff applied by its context lines, no decoding", looks_like_diff,
                  plan_patch, exact=True),
    PastedPlanner("search-replace", "SEARCH/REPLACE blocks", "pasted SEARCH/REPLACE blocks applied, no decoding",
                  has_markers, plan_search_replace, exact=True),
    PastedPlanner("snippet-merge", "snippet", "pasted snippet merged by its anchors, no decoding", lambda _: True,
                  plan_snippet, exact=False),
)


def plan_pasted(document: str, instruction: str) -> PastedPlan:
    """The plan of the planner that claims the instruction (its ``text`` None: the model decodes)."""
    planner = next(p for p in PLANNERS if p.claims(instruction))
    try:
        return PastedPlan(planner.name, planner.plan(document, instruction))
    except NoPlan as exc:
        return PastedPlan(planner.name, None, str(exc))


def planner_note(name: str) -> str | None:
    """The front-end note of a model-free planner's edit; None for ``model`` (or an unknown name)."""
    return next((p.note for p in PLANNERS if p.name == name), None)
