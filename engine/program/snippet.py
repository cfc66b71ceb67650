"""Merge a pasted code snippet by its anchors, without the model: the exact half of "apply this change".

Editor users paste a chat model's answer (or a colleague's) as the instruction: a fenced block of
changed code in which unchanged stretches are elided by placeholder comments
(``# ... existing code ...``, ``// rest unchanged``; `engine.program.placeholders` decides what
reads as one). When the snippet pins down one merge, the merge is computed here, exactly and in
microseconds, and the edit program is the oracle's program for it (`engine.edit` does that). When it
does not, ``merge_snippet`` returns ``None`` and the model decodes the edit as usual. Lines compare
without trailing whitespace (and ``\\r``).

1. **The snippets** are the instruction's fenced code blocks (```` ``` ```` or ``~~~``), each merged
   into the document on its own and the changes combined; every one must anchor (a block for
   another file, or a shell command, leaves the whole instruction to the model), one the document
   already holds (the "before" of a before/after answer) changes nothing, and two that change the
   same lines are no merge. Without a fence, the instruction's lines after a leading prose line
   ending in ``:`` (or all of them) are one snippet when one is a placeholder or two are document
   lines. An unclosed fence is no snippet.
2. **Placeholder lines** (new to the document and `looks_like_placeholder`) cut it into segments;
   what a placeholder elides is kept. Document lines before the first segment and after the last
   are kept too (an unelided start or end is how a local change is usually shown).
3. **A segment is placed** by its longest leading run of lines that matches the document (after
   the previous segment); anchors hold a non-blank line.
   * A segment that matches the document whole is context: it moves the cursor, or is skipped
     when it matches at several places.
   * A segment with new lines ends at a trailing run of its last lines; of the possible ends, the
     one whose region is most like the segment wins. The region may exceed the segment by
     ``max(MIN_REACH, segment lines)`` lines at most: a far anchor would silently delete the code
     in between (no merge, the model decides).
   * When its last line is new, the part up to its last document line is placed so, and each new
     line after it replaces the next document line if they look alike (``_SIMILAR``), goes beside
     it if they do not (``_UNLIKE``), and leaves the merge to the model in between. A new first
     line is the mirror image, looking at the lines above. A segment of new lines only (a changed
     line between placeholders) replaces the line after the previous segment that looks clearly
     most like its first line (``_LONE_REACH``, ``_CLEAR``), else is no merge.
   * When the leading run matches at several places, the placement most like the segment wins; a
     tie is no merge.
4. **Blank lines are layout**: a blank document line the snippet leaves out is kept, and a
   segment's blank lines next to a placeholder are not anchors. Blank lines at the snippet's own
   start or end are not anchors either, but the document must have a blank line (or nothing) there:
   beside code they may mean that code is deleted, which is unclear (no merge).
5. **A merge that changes nothing is no merge**: the pasted code may be what the instruction is
   about ("fix this: ..."), not its new version. ``None``, and the model decides.
"""
from __future__ import annotations

import difflib
from collections import Counter
from typing import NamedTuple

from engine.program.pasted_text import DocumentLines, NoPlan, document_lines, fenced_blocks, keep_last_break, or_none
from engine.program.placeholders import looks_like_placeholder

__all__ = ["MIN_REACH", "extract_snippets", "merge_snippet", "plan_snippet"]

MIN_REACH = 8            # a segment may drop unshown lines: at most max(MIN_REACH, its own length)
_STARTS_TRIED = 16       # leading-anchor places compared when the leading run is not unique
_SIMILAR = 0.6           # difflib ratio from which a new last line replaces the document line ...
_UNLIKE = 0.3            # ... and below which it is inserted (in between: no merge)
_LONE_REACH = 200        # a segment of new lines only looks this far after the cursor for its line ...
_CLEAR = 0.1             # ... and takes the best look-alike only when it beats the next by this much
_WORK_LIMIT = 4_000_000  # segments x document lines above which no merge is tried (bounded time)


def extract_snippets(instruction: str, known: set[str]) -> list[list[str]] | None:
    """The snippets' lines (rule 1): every fenced block, else the unfenced snippet; None when there
    is none. ``known``: the document's stripped lines."""
    lines = instruction.split("\n")
    blocks = fenced_blocks(lines)
    if blocks is None:
        return None                         # an unclosed fence: not a snippet
    if blocks:
        return [block.lines for block in blocks if block.lines] or None
    if lines and lines[0].rstrip().endswith(":") and lines[0].strip() not in known:
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    anchors = sum(1 for line in lines if line.strip() and line.strip() in known)
    if anchors < 2 and not any(_is_placeholder(line, known) for line in lines):
        return None
    return [lines]


def _is_placeholder(line: str, known: set[str]) -> bool:
    return line.strip() not in known and looks_like_placeholder(line)


class _Segment(NamedTuple):
    """Snippet lines between placeholders, without blank lines at their edges (layout, rule 4)."""

    lines: list[str]
    blank_before: bool   # the snippet itself starts with blank lines before these ...
    blank_after: bool    # ... or ends with blank lines after them: the document must agree (rule 4)


def _segments(snippet: list[str], known: set[str]) -> list[_Segment]:
    parts, current = [], []
    for line in snippet:
        if _is_placeholder(line, known):
            parts.append(current)
            current = []
        else:
            current.append(line.rstrip())
    parts.append(current)
    out = []
    for k, part in enumerate(parts):
        start, end = 0, len(part)
        while start < end and not part[start].strip():
            start += 1
        while end > start and not part[end - 1].strip():
            end -= 1
        if start < end:
            out.append(_Segment(part[start:end], k == 0 and start > 0, k == len(parts) - 1 and end < len(part)))
    return out


def _edges_agree(doc: list[str], seg: _Segment, a: int, end: int) -> bool:
    """A blank line at the snippet's own start (end) says the document line above (below) the placed
    segment is blank or absent; when it is code, the snippet may delete it: unclear, no merge."""
    above_code = seg.blank_before and a > 0 and bool(doc[a - 1].strip())
    below_code = seg.blank_after and end + 1 < len(doc) and bool(doc[end + 1].strip())
    return not above_code and not below_code


def _forward_run(doc: list[str], seg: list[str], a: int) -> int:
    k = 0
    while a + k < len(doc) and k < len(seg) and doc[a + k] == seg[k]:
        k += 1
    return k


def _backward_run(doc: list[str], seg: list[str], b: int, floor: int, limit: int) -> int:
    k = 0
    while k < limit and b - k >= floor and doc[b - k] == seg[len(seg) - 1 - k]:
        k += 1
    return k


def _likeness(region: list[str], seg: list[str]) -> float:
    shared = sum((Counter(region) & Counter(seg)).values())
    return 2 * shared / (len(region) + len(seg))


def _trailing_anchor(doc: list[str], seg: list[str], a: int, lead: int) -> tuple[tuple, int, int] | None:
    """(score, end, run) of the end whose region is most like the segment (rule 3), or None."""
    floor, limit = a + lead, len(seg) - lead
    wanted = Counter(seg)
    region: Counter = Counter(doc[a:floor])
    shared = sum(min(n, wanted[line]) for line, n in region.items())
    best = None
    reach = a + len(seg) + max(MIN_REACH, len(seg))      # the region exceeds the segment by at most this
    for b in range(floor, min(len(doc), reach)):
        line = doc[b]
        if region[line] < wanted[line]:
            shared += 1
        region[line] += 1
        run = _backward_run(doc, seg, b, floor, limit)
        if run and any(x.strip() for x in seg[len(seg) - run:]):
            score = (2 * shared / (b - a + 1 + len(seg)), run)
            if best is None or score > best[0]:
                best = (score, b, run)
    return best


def _new_tail(doc: list[str], seg: list[str], a: int, lead: int) -> tuple[tuple, int, int] | None:
    """(score, end, 0) when the segment's last line is new (rule 3): the part up to its last document
    line anchors as usual; each new line after it replaces the next document line when they look alike
    (ratio >= ``_SIMILAR``) and is inserted when they do not (ratio < ``_UNLIKE``, or a blank line);
    in between it is unclear which was meant: None."""
    last = max((j for j in range(lead, len(seg)) if seg[j].strip() and seg[j] in doc), default=lead - 1)
    at = a + lead
    if last >= lead:
        found = _trailing_anchor(doc, seg[:last + 1], a, lead)
        if found is None:
            return None
        at = found[1] + 1
    for line in seg[last + 1:]:
        if at < len(doc):
            replaces = _replaces(doc[at], line)
            if replaces is None:
                return None
            at += replaces
    return (_likeness(doc[a:at], seg), 0), at - 1, 0


def _replaces(doc_line: str, new_line: str) -> bool | None:
    """Does a new line at a segment's edge replace this document line (True), go beside it (False),
    or is that unclear (None)? See ``_SIMILAR`` / ``_UNLIKE``. A blank line facing a blank line is that
    line (layout: the walk goes past it); a blank line facing code, or code facing a blank line, goes beside."""
    if not new_line.strip() or not doc_line.strip():
        return not new_line.strip() and not doc_line.strip()
    ratio = difflib.SequenceMatcher(None, doc_line, new_line).ratio()
    return True if ratio >= _SIMILAR else False if ratio < _UNLIKE else None


def _new_head(doc: list[str], seg: list[str], cursor: int):
    """Placement of a segment whose first line is new: the rest from its first document line on is
    placed as usual, and the new lines before it replace look-alike lines above it (``_replaces``)."""
    known = set(doc)
    first = next((j for j, line in enumerate(seg) if line.strip() and line in known), None)
    if first is None:
        return _all_new(doc, seg, cursor)
    placed = _place(doc, seg[first:], cursor)
    if placed is None or placed == "skip":
        return None
    at, _, end, trail = placed
    for line in reversed(seg[:first]):
        if at > cursor:
            replaces = _replaces(doc[at - 1], line)
            if replaces is None:
                return None
            at -= replaces
    return at, 0, end, trail


def _all_new(doc: list[str], seg: list[str], cursor: int):
    """Placement of a segment none of whose lines the document has (a changed line between two
    placeholders, say): its first line replaces the one document line after the cursor (within
    ``_LONE_REACH``) that looks most like it, when that line is clearly the best (``_SIMILAR``,
    ``_CLEAR``); its next lines replace or go beside the lines after (``_replaces``)."""
    window = range(cursor, min(len(doc), cursor + _LONE_REACH))
    scored = sorted(((difflib.SequenceMatcher(None, doc[k], seg[0]).ratio(), k) for k in window
                     if doc[k].strip()), reverse=True)
    if not scored or scored[0][0] < _SIMILAR or (len(scored) > 1 and scored[1][0] > scored[0][0] - _CLEAR):
        return None
    at = start = scored[0][1]
    for line in seg:
        if at < len(doc):
            replaces = _replaces(doc[at], line)
            if replaces is None:
                return None
            at += replaces
    return start, 0, at - 1, 0


def _place(doc: list[str], seg: list[str], cursor: int):
    """(start, lead, end, trail) of a segment; "skip" for an ambiguous context-only one; None: no merge."""
    if seg[0].strip() and seg[0] not in doc:
        return _new_head(doc, seg, cursor)
    runs = [(_forward_run(doc, seg, a), a) for a in range(cursor, len(doc))]
    lead = max((run for run, _ in runs), default=0)
    if lead == 0 or not any(line.strip() for line in seg[:lead]):
        return None
    starts = [a for run, a in runs if run == lead]
    if lead == len(seg):
        return (starts[0], lead, starts[0] + lead - 1, 0) if len(starts) == 1 else "skip"
    tail_new = bool(seg[-1].strip()) and seg[-1] not in doc
    options = []
    for a in starts[:_STARTS_TRIED]:
        found = _new_tail(doc, seg, a, lead) if tail_new else _trailing_anchor(doc, seg, a, lead)
        if found is not None:
            options.append((found[0], -a, found[1], found[2]))
    if not options:
        return None
    options.sort(reverse=True)
    if len(options) > 1 and options[0][0] == options[1][0]:
        return None                               # two placements fit equally well: ambiguous
    _, neg_a, end, trail = options[0]
    return -neg_a, lead, end, trail


def _middle(raw: list[str], doc: list[str], lo: int, hi: int, new: list[str], crlf: bool) -> list[str]:
    """Document lines lo..hi-1 rewritten as ``new``: equal lines stay the document's, blank ones are kept."""
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, doc[lo:hi], new, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "delete" and not any(doc[lo + i].strip() for i in range(i1, i2))):
            out.extend(raw[lo + i1:lo + i2])
        else:
            out.extend(line + "\r" if crlf else line for line in new[j1:j2])
    return out


def _merge_block(document: DocumentLines, snippet: list[str]) -> list[str]:
    """The document's lines with one snippet merged (rules 2-4); ``NoPlan`` when it does not anchor."""
    raw, doc, known, crlf = document
    segments = _segments(snippet, known)
    if len(segments) * (len(doc) + _LONE_REACH) > _WORK_LIMIT:
        raise NoPlan("it is too large to place")   # a pathological paste: not worth the server's time
    out, cursor = [], 0
    for seg in segments:
        placed = _place(doc, seg.lines, cursor)
        first = next(line for line in seg.lines if line.strip()).strip()[:50]
        if placed is None:
            raise NoPlan(f"its lines from {first!r} fit no one place of the document (after the part above "
                         f"them) without dropping unshown lines; paste more lines around the change")
        if placed == "skip":
            continue
        a, lead, end, trail = placed
        if not _edges_agree(doc, seg, a, end):
            raise NoPlan(f"a blank line at its edge beside {first!r} may delete code there; leave it out")
        lines = seg.lines
        out.extend(raw[cursor:a + lead])
        out.extend(_middle(raw, doc, a + lead, end + 1 - trail, lines[lead:len(lines) - trail], crlf))
        out.extend(raw[end + 1 - trail:end + 1])
        cursor = end + 1
    out.extend(raw[cursor:])
    return keep_last_break(out, document)


def _hunks(old: list[str], new: list[str]) -> list[tuple[int, int, list[str]]]:
    """The changes turning lines ``old`` into ``new``: (first line, end line, new lines), 0-based."""
    return [(i1, i2, new[j1:j2]) for tag, i1, i2, j1, j2 in
            difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if tag != "equal"]


def plan_snippet(document: str, instruction: str) -> str | None:
    """The document with the instruction's snippets merged in (module rules); None when it has no
    snippet; ``NoPlan`` (with the reason when the snippet is about this document: it has a placeholder
    or two of its lines) for one that does not anchor, two that change the same lines, or no change."""
    doc = document_lines(document)
    snippets = extract_snippets(instruction, doc.known)
    if not snippets:
        return None
    try:
        return _merge_all(document, doc, snippets)
    except NoPlan as exc:
        lines = [line for snippet in snippets for line in snippet]
        about = sum(1 for line in lines if line.strip() and line.strip() in doc.known) >= 2 or \
            any(_is_placeholder(line, doc.known) for line in lines)
        raise NoPlan(str(exc) if about else "") from None


# plan_snippet's text, or None: no snippet, one that does not anchor, two that change the same lines,
# or no change at all (rule 5)
merge_snippet = or_none(plan_snippet)


def _merge_all(document: str, doc: DocumentLines, snippets: list[list[str]]) -> str:
    hunks = []
    for k, snippet in enumerate(snippets, 1):   # each against the document, so order does not matter
        try:
            hunks.extend(_hunks(doc.raw, _merge_block(doc, snippet)))
        except NoPlan as exc:
            raise NoPlan(f"block {k} of {len(snippets)}: {exc}" if len(snippets) > 1 else str(exc)) from None
    hunks.sort(key=lambda h: (h[0], h[1]))
    for (a1, a2, _), (b1, b2, _) in zip(hunks, hunks[1:]):
        if b1 < a2 or (b1 == a1 and b1 == b2):   # overlapping, or two insertions at one place
            raise NoPlan("two of its blocks change the same lines")
    out, at = [], 0
    for i1, i2, new in hunks:
        out.extend(doc.raw[at:i1])
        out.extend(new)
        at = i2
    out.extend(doc.raw[at:])
    text = "\n".join(out)
    if text == document:
        raise NoPlan("")                       # rule 5: the code may be what the instruction is about
    return text
