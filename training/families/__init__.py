"""Edit task families: each turns a source document into an (instruction, gold) edit case.

One registry, ``FAMILIES``: name → ``make(doc, lang, rng) -> EditCase | None`` (None when the
document offers no place for this kind of edit). Families and their kinds:

* ``bugfix``     operator / comparison swaps, off-by-one, wrong literal or variable, deleted or
                 swapped line; the document is the broken version, the gold the original
* ``snippet``    apply a snippet whose unchanged parts are ``… existing code …`` placeholders
                 (in the language's comment syntax), or a whole replacement function
* ``mechanical`` rename a symbol, add/remove a parameter, insert/delete lines or a block, add a
                 comment or docstring, change a literal, set a value named by its key
* ``noop``       requests that leave the document as it is (nothing to do, or already applied)
"""
from __future__ import annotations

from training.families import bugfix, mechanical, noop, snippet
from training.families.common import EditCase

FAMILIES = {
    "bugfix": bugfix.make,
    "snippet": snippet.make,
    "mechanical": mechanical.make,
    "noop": noop.make,
}

__all__ = ["FAMILIES", "EditCase"]
