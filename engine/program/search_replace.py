"""Apply pasted SEARCH/REPLACE blocks (the edit format of Aider and of many coding assistants).

    <<<<<<< SEARCH
        return total / (len(values) - 1)
    =======
        return total / len(values)
    >>>>>>> REPLACE

Each block's SEARCH lines must occur **exactly once** in the text the earlier blocks left (lines
compare without trailing whitespace); they are replaced by its REPLACE lines. Aider takes the first
occurrence; here an ambiguous block, one that is not found, an empty SEARCH part or a malformed
block (a marker missing) leaves the whole instruction to the model (``NoPlan`` says why;
``apply_search_replace`` returns ``None``): never a half-applied edit. Markers are 5 to 9 of ``<``, ``=``, ``>`` (7 in Aider), alone on their
line; anything around the blocks (a file name, fences, prose) is not read. A result equal to the
document is ``None``. Replaced lines are written with the document's line breaks.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from engine.program.pasted_text import NoPlan, document_lines, find_runs, keep_last_break, new_line, or_none

__all__ = ["Block", "apply_search_replace", "find_blocks", "has_markers", "plan_search_replace"]

_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9} ?REPLACE\s*$")


class Block(NamedTuple):
    search: list[str]
    replace: list[str]


def has_markers(instruction: str) -> bool:
    """Whether the instruction shows a SEARCH marker at all."""
    return any(_SEARCH.match(line.rstrip("\r")) for line in instruction.split("\n"))


def find_blocks(instruction: str) -> list[Block]:
    """The instruction's blocks in order; ``NoPlan`` when it has none or one is malformed."""
    blocks, part, state = [], ([], []), None
    for line in instruction.split("\n"):
        line = line.rstrip("\r")
        if state is None:
            if _SEARCH.match(line):
                part, state = ([], []), 0
            elif _DIVIDER.match(line) or _REPLACE.match(line):
                raise NoPlan(f"block {len(blocks) + 1}: {line.strip()!r} comes before its SEARCH marker")
        elif state == 0 and _DIVIDER.match(line):
            state = 1
        elif state == 1 and _REPLACE.match(line):
            blocks.append(Block(*part))
            state = None
        elif _SEARCH.match(line) or _REPLACE.match(line) or (state == 1 and _DIVIDER.match(line)):
            raise NoPlan(f"block {len(blocks) + 1}: {line.strip()!r} comes out of order")
        else:
            part[state].append(line)
    if state is not None:
        raise NoPlan(f"block {len(blocks) + 1} has no {'=======' if state == 0 else '>>>>>>> REPLACE'} line")
    if not blocks:
        raise NoPlan("no SEARCH/REPLACE block was found")
    return blocks


def plan_search_replace(document: str, instruction: str) -> str:
    """The document with the instruction's SEARCH/REPLACE blocks applied (module rules); ``NoPlan`` says why not."""
    blocks = find_blocks(instruction)
    doc = document_lines(document)
    raw, keys = list(doc.raw), list(doc.keys)
    for k, block in enumerate(blocks, 1):
        want = [line.rstrip() for line in block.search]
        if not any(want):
            raise NoPlan(f"block {k}'s SEARCH part is empty or blank lines only: it says not where")
        n = len(want)
        hits = find_runs(keys, want)
        if len(hits) != 1:
            first = next(line for line in want if line).strip()[:50]
            found = "is not in the document" if not hits else f"occurs at {len(hits)} places"
            raise NoPlan(f"block {k}'s SEARCH part (from {first!r}) {found}")
        a = hits[0]
        raw[a:a + n] = [new_line(line, doc.crlf) for line in block.replace]
        keys[a:a + n] = [line.rstrip() for line in block.replace]
    text = "\n".join(keep_last_break(raw, doc))
    if text == document:
        raise NoPlan("applying the blocks changes nothing")
    return text


apply_search_replace = or_none(plan_search_replace)   # the text, or None
