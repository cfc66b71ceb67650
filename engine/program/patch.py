"""Apply a pasted unified diff by its context lines, without the model.

Code review, ``git diff`` and chat models hand out changes as unified diffs ("Apply this patch:" and
a ```` ```diff ```` block). Such an instruction says exactly what the new text is, so it is applied
here, exactly and in microseconds, like ``patch`` without fuzz; the edit program is the oracle's
program for the result (`engine.edit`). When the diff does not pin down one result, ``plan_patch``
raises ``NoPlan`` saying why (``apply_patch`` returns ``None``) and the model decodes the instruction.

1. **Finding the diff**: the instruction's fenced blocks that hold a hunk header (``@@``), or whose
   info string is ``diff``/``patch``/``udiff`` (a chat model's diff often has no header: the block
   is then one hunk); without such a block, the instruction's lines from its first hunk header on
   (a diff pasted as is may show fences of the document's own, a docstring's say, in its lines).
   File headers (``diff --git``, ``---``/``+++``) split it into files: the file whose every hunk
   places in the document is the one applied (none or several: no merge). A file the diff creates
   (``--- /dev/null``) is a candidate for an empty document only.
2. **A hunk** is its header (``@@ -a,b +c,d @@``; chat models write ``@@ ... @@`` or ``@@``: no line
   numbers) and the lines after it that start with ``" "`` (context), ``-`` (removed) or ``+``
   (added); an empty line is blank context (editors strip the space), except empty lines at the
   hunk's end beyond its header's counts (or all of them, without counts), which end the hunk;
   ``\\ No newline at end of file`` is ignored. A ``+``/``-`` line outside any hunk means the diff
   is malformed (a context line lost its leading space, say): no merge, nothing half-applied.
   **2b.** A ``diff`` block without hunk headers that does not apply so is read once more the way
   chat models often write one: the changed lines marked ``-``/``+``, every other line a context
   line as it stands in the document (no leading space). It must then fit like any hunk.
3. **Placing a hunk**: its old lines (context and removed) must occur in the document after the
   previous hunk, comparing lines without trailing whitespace. One occurrence: there. Several: the
   one nearest the header's line (moved by the previous hunks' offset); a tie, or no line numbers,
   is no merge. A hunk without old lines (a pure insertion) goes where its line numbers say.
   **3b.** A context line that is a placeholder new to the document (``# ... existing code ...``,
   `engine.program.placeholders`) cuts its hunk in two parts placed one after the other: what it
   elides is kept, as in a snippet.
4. **All or nothing**: every hunk must place, else ``None``; a result equal to the document (a diff
   already applied, say) is ``None`` too. Context lines keep the document's text and line breaks;
   added lines are written as given, with the document's line breaks.
The instruction's prose is not read: a diff is the whole of what is applied.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from engine.program.pasted_text import (DocumentLines, NoPlan, document_lines, fenced_blocks, find_runs, keep_last_break,
                                       new_line, or_none)
from engine.program.placeholders import looks_like_placeholder

__all__ = ["Hunk", "apply_patch", "find_diff_files", "looks_like_diff", "plan_patch"]

DIFF_INFOS = ("diff", "patch", "udiff")
_HEADER = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BARE_HEADER = re.compile(r"^@@(?:\s.*)?$")


class Hunk(NamedTuple):
    lines: list[tuple[str, str]]   # (" " | "-" | "+", text)
    old_start: int | None          # 1-based first old line from the header (None: no numbers)
    old_count: int | None
    creates: bool = False          # its file's old side is /dev/null: a new file's content

    @property
    def old(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "+"]


def _is_header(line: str) -> bool:
    return bool(_HEADER.match(line) or _BARE_HEADER.match(line))


def _file_header(lines: list[str], i: int) -> int:
    """How many lines of a file header start at ``i`` (``diff --git``: 1; ``---`` + ``+++``: 2; else 0)."""
    if lines[i].startswith("diff --git ") or lines[i].startswith("Index: "):
        return 1
    if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
        return 2
    return 0


def _read_hunk(lines: list[str], i: int, header: str) -> tuple[Hunk, int]:
    """The hunk whose body starts at line ``i`` and the index after it (rule 2)."""
    m = _HEADER.match(header)
    old_start = int(m.group(1)) if m else None
    old_count = (int(m.group(2)) if m.group(2) is not None else 1) if m else None
    body, from_empty = [], []
    while i < len(lines):
        line = lines[i]
        if _is_header(line) or _file_header(lines, i):
            break
        if line.startswith("\\"):
            i += 1
            continue
        stripped = line.rstrip("\r")
        if stripped[:1] in (" ", "-", "+"):
            body.append((stripped[0], stripped[1:]))
            from_empty.append(False)
        elif not stripped.strip():
            body.append((" ", ""))
            from_empty.append(True)
        else:
            break
        i += 1
    while body and from_empty[-1]:     # trailing empty lines end the hunk unless the counts claim them
        if old_count is not None and sum(kind != "+" for kind, _ in body) <= old_count:
            break
        body.pop()
        from_empty.pop()
    return Hunk(body, old_start, old_count), i


def _parse_files(lines: list[str], headerless: bool) -> list[list[Hunk]]:
    """The diff's files, each a list of hunks; ``NoPlan`` when it is malformed (rule 2)."""
    if headerless and not any(_is_header(line) for line in lines):
        at = 0
        while at < len(lines) and _file_header(lines, at):
            at += _file_header(lines, at)
        hunk, end = _read_hunk(lines, at, "@@")
        rest = next((line for line in lines[end:] if line.strip()), None)
        if rest is not None:
            raise NoPlan(f"the diff block's line {rest[:60]!r} is no context, '-' or '+' line")
        if not any(kind != " " for kind, _ in hunk.lines):
            raise NoPlan("the diff block changes no line")
        return [[hunk]]
    files, hunks, i, creates = [], [], 0, False
    while i < len(lines):
        skip = _file_header(lines, i)
        if skip:
            if hunks:
                files.append(hunks)
            creates = skip == 2 and lines[i][4:].split("\t")[0].strip() == "/dev/null"
            hunks, i = [], i + skip
        elif _is_header(lines[i]):
            hunk, i = _read_hunk(lines, i + 1, lines[i])
            hunks.append(hunk._replace(creates=creates))
        elif lines[i][:1] in ("+", "-") and (hunks or files):
            raise NoPlan(f"the diff line {lines[i][:60]!r} is a change outside any hunk "
                         f"(a context line above it may have lost its leading space)")
        else:
            i += 1
    if hunks:
        files.append(hunks)
    return files


def find_diff_files(instruction: str) -> list[list[Hunk]] | None:
    """The files of the instruction's diff (rule 1); None when it holds none; ``NoPlan`` when malformed."""
    lines = instruction.split("\n")
    files = []
    for block in fenced_blocks(lines) or ():
        tagged = block.info in DIFF_INFOS
        if tagged or any(_is_header(line) for line in block.lines):
            files.extend(_parse_files(block.lines, headerless=tagged))
    if files:
        return files
    start = next((i for i, line in enumerate(lines) if _is_header(line)), None)
    if start is None:
        return None
    while start > 0 and (lines[start - 1].startswith(("--- ", "+++ ", "diff --git ", "index ", "Index: "))):
        start -= 1
    return _parse_files(lines[start:], headerless=False) or None


def looks_like_diff(instruction: str) -> bool:
    """Whether the instruction shows a diff at all (a hunk header, or a block tagged as one)."""
    lines = instruction.split("\n")
    return any(_is_header(line) for line in lines) or \
        any(block.info in DIFF_INFOS for block in fenced_blocks(lines) or ())


def _place(doc: DocumentLines, hunk: Hunk, cursor: int, offset: int) -> int:
    """The 0-based document line where the hunk's old lines start (rule 3); ``NoPlan`` says why not."""
    hint = None if hunk.old_start is None else hunk.old_start - 1 + offset
    if not hunk.old:
        if hunk.old_start is None:
            raise NoPlan("it only adds lines and has no line numbers to say where")
        at = hunk.old_start + offset          # "-a,0": the new lines go after old line a
        if not cursor <= at <= len(doc.keys):
            raise NoPlan(f"it adds lines after line {hunk.old_start}, outside the document")
        return at
    found = find_runs(doc.keys, hunk.old, cursor)
    if len(found) == 1:
        return found[0]
    first = hunk.old[0].strip()[:50]
    if not found:
        where = "in the document" if cursor == 0 else "after the previous hunk"
        raise NoPlan(f"its {len(hunk.old)} context and removed lines (from {first!r}) are not {where}")
    if hint is None:
        raise NoPlan(f"its lines (from {first!r}) occur at {len(found)} places and it has no line numbers")
    found.sort(key=lambda a: abs(a - hint))
    if abs(found[0] - hint) == abs(found[1] - hint):
        raise NoPlan(f"its lines (from {first!r}) occur at two places equally near its line numbers")
    return found[0]


def _apply_file(doc: DocumentLines, hunks: list[Hunk]) -> list[str]:
    out, cursor, offset = [], 0, 0
    for k, hunk in enumerate(hunks, 1):
        try:
            at = _place(doc, hunk, cursor, offset)
        except NoPlan as exc:
            raise NoPlan(f"hunk {k} does not fit: {exc}") from None
        if hunk.old_start is not None:
            offset = at - (hunk.old_start - 1 if hunk.old else hunk.old_start)
        out.extend(doc.raw[cursor:at])
        pos = at
        for kind, text in hunk.lines:
            if kind == "+":
                out.append(new_line(text, doc.crlf))
            else:
                if kind == " ":
                    out.append(doc.raw[pos])
                pos += 1
        cursor = pos
    out.extend(doc.raw[cursor:])
    return keep_last_break(out, doc)


def _bare_block_files(instruction: str) -> list[list[Hunk]]:
    """The ``diff``-tagged blocks without hunk headers read as a chat model often writes them: only the
    changed lines marked (``-``/``+``), the context lines as they are in the document (rule 2b)."""
    files = []
    for block in fenced_blocks(instruction.split("\n")) or ():
        if block.info not in DIFF_INFOS or any(_is_header(line) for line in block.lines):
            continue
        lines, at = block.lines, 0
        while at < len(lines) and _file_header(lines, at):
            at += _file_header(lines, at)
        body = [(line[0], line[1:]) if line[:1] in ("-", "+") else (" ", line) for line in lines[at:]
                if not line.startswith("\\")]
        while body and body[-1] == (" ", ""):
            body.pop()
        while body and body[0] == (" ", ""):
            body.pop(0)
        if any(kind != " " for kind, _ in body):
            files.append([Hunk(body, None, None)])
    return files


def plan_patch(document: str, instruction: str) -> str:
    """The document with the instruction's unified diff applied (module rules); ``NoPlan`` says why not."""
    try:
        return _plan_files(document, find_diff_files(instruction))
    except NoPlan as exc:
        bare = _bare_block_files(instruction)
        if not bare:
            raise
        try:
            return _plan_files(document, bare)
        except NoPlan as bare_exc:   # say why in the reading the block was written for
            raise (bare_exc if str(exc).startswith("the diff block's line") else exc) from None


def _split_at_placeholders(hunk: Hunk, known: set[str]) -> list[Hunk]:
    """A hunk cut at its placeholder context lines (``... existing code ...``, new to the document):
    the parts are placed one after the other, what a placeholder elides is kept (rule 3b)."""
    parts, current = [], []
    for kind, text in hunk.lines:
        if kind == " " and text.strip() not in known and looks_like_placeholder(text):
            parts.append(current)
            current = []
        else:
            current.append((kind, text))
    parts.append(current)
    if len(parts) == 1:
        return [hunk]
    out = []
    for k, lines in enumerate(parts):
        while lines and lines[0] == (" ", ""):         # blank lines beside a placeholder are layout
            lines = lines[1:]
        while lines and lines[-1] == (" ", ""):
            lines = lines[:-1]
        if lines:
            out.append(Hunk(lines, hunk.old_start if k == 0 else None, None))
    return out


def _plan_files(document: str, files: list[list[Hunk]] | None) -> str:
    if not files:
        raise NoPlan("no diff hunk was found")
    if document.strip():          # a new file's content is no edit of an existing document
        files = [hunks for hunks in files if not all(hunk.creates for hunk in hunks)]
        if not files:
            raise NoPlan("it only creates new files, and this document is not empty")
    doc = document_lines(document)
    files = [[part for hunk in hunks for part in _split_at_placeholders(hunk, doc.known)] for hunks in files]
    results, reasons = set(), []
    for hunks in files:
        try:
            results.add(tuple(_apply_file(doc, hunks)))
        except NoPlan as exc:
            reasons.append(str(exc))
    if not results:
        raise NoPlan(reasons[0] if len(files) == 1 else f"none of its {len(files)} files fits ({reasons[0]}, ...)")
    if len(results) > 1:
        raise NoPlan(f"{len(results)} of its files fit the document, with different results")
    text = "\n".join(results.pop())
    if text == document:
        raise NoPlan("applying it changes nothing (is it applied already?)")
    return text


apply_patch = or_none(plan_patch)   # the text, or None
