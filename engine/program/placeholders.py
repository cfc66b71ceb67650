"""Lazy-placeholder guard: refuse an edit whose new text says "… existing code …" where code was deleted.

Why: the commonest way edit-apply tools lose code is a model that writes a placeholder comment
(``# ... existing code ...``, ``// rest of the function``, ``# ... rest unchanged``) as *generated*
text instead of copying the lines it stands for. Applied literally, the placeholder replaces the
code. Copy-as-Decode makes copying cheap, but a model can still generate such a line, so the
result is checked against the document before anything is applied (``cad.applyEdit``,
``cad.applyPreview``, ``cad-apply --write``).

The rule is general, not a list of phrasings. A line of the new text is a *lazy placeholder* when

1. it is **new** — the document has no line with the same stripped text (a placeholder the
   document already contains, e.g. a stub ``...`` or an existing ``# rest unchanged`` comment, was
   copied, not invented), and
2. it **looks like an elision**: a bare ellipsis (``...``, ``…``, ``[...]``, ``/* ... */``), or a
   comment-only line whose text holds an ellipsis, or a short comment (≤ 8 words, no TODO/FIXME/
   NOTE) that pairs a *what-is-missing* word (rest, remaining, existing, unchanged, omitted, same,
   previous, original, other, …) with a *code* noun or is made of such words only, and
3. it **stands for deleted code**: its diff hunk (hunks separated only by blank lines count as
   one) deletes at least one non-blank document line, or — when repeated lines make the diff
   place the deletion elsewhere — some non-blank document line is missing from the result. A placeholder that deletes nothing
   loses nothing and is let through (the diff still shows it).

Stdlib only: the LSP server, ``clients.batch`` and the snippet merger (``engine.program.snippet``) import it.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["LazyPlaceholder", "find_lazy_placeholders", "looks_like_placeholder", "refusal_message"]

# Comment leaders: # // /* * -- ; % <!-- ' REM, OCaml/F#/Pascal (*, JSX {/*, Haskell {-, PowerShell <#,
# and, followed by a space, Fortran !, batch ::, Vim " (a line with a second " is a string, not a comment).
_COMMENT = re.compile(r"^(?:#+|//+|/\*+|\*+|--|;+|%+|<!--|'|@?rem\b|\(\*+|\{/\*+|\{-+|<#|(?:!+|::)(?=\s)"
                      r"|\"(?=\s)(?=[^\"]*$))\s*(.*?)\s*(?:\*+/\}?|\*+\)|-+\}|#>|-->)?\s*$", re.IGNORECASE)
_ELLIPSIS = re.compile(r"\.\s?\.\s?\.|…")
_BARE = re.compile(r"^(?:\.\.\.|…|\[\s*(?:\.\.\.|…)\s*\]|\(\s*(?:\.\.\.|…)\s*\)|\{\s*(?:\.\.\.|…)\s*\})[;,]?$")
_MISSING = {"rest", "remaining", "remainder", "existing", "unchanged", "omitted", "elided", "same", "previous",
            "original", "other", "others", "untouched", "unmodified", "snip", "snipped", "truncated", "skipped",
            "etc", "before", "as-is", "keep"}
_CODE = {"code", "codes", "function", "functions", "method", "methods", "class", "classes", "file", "implementation",
         "body", "line", "lines", "logic", "module", "content", "contents", "tests", "test", "cases", "imports",
         "definitions", "stuff", "here", "above", "below", "unchanged", "omitted", "same", "before", "helpers",
         "fields", "properties", "members", "block", "blocks", "section", "sections", "loop", "program"}
_NOTE = re.compile(r"\b(?:todo|fixme|xxx|note|hack|bug)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)?")


@dataclass(frozen=True)
class LazyPlaceholder:
    line: int            # 1-based line of the new text
    text: str            # the placeholder line, stripped
    deleted: int         # non-blank document lines its hunk deletes
    first_deleted: int   # 1-based document line of the first deleted line


def looks_like_placeholder(line: str) -> bool:
    """Rule 2 alone: does this single line read like an elision marker?"""
    s = line.strip()
    if not s:
        return False
    if _BARE.match(s):
        return True
    m = _COMMENT.match(s)
    if m is None:
        return False
    body = m.group(1)
    if _NOTE.search(body):
        return False
    if _ELLIPSIS.search(body):
        return True
    words = _WORD.findall(body.lower())
    if not words or len(words) > 8:
        return False
    content = [w for w in words if w not in {"the", "of", "a", "an", "is", "are", "as", "remains", "stays", "to",
                                             "goes", "go", "all", "and", "this", "that", "in", "for", "kept", "be", "here",
                                             "brevity", "clarity", "now", "left", "out", "like"}]
    if not content or not any(w in _MISSING for w in content):
        return False
    return all(w in _MISSING or w in _CODE for w in content) or (any(w in _CODE for w in content) and len(content) <= 3)


def _groups(opcodes, old: list[str], new: list[str]):
    """Merge diff hunks separated only by blank lines (a blank line is not an anchor)."""
    group: list = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            if group and all(not line.strip() for line in old[i1:i2]):
                continue
            if group:
                yield group
            group = []
        else:
            group.append((tag, i1, i2, j1, j2))
    if group:
        yield group


def find_lazy_placeholders(document: str, new_text: str) -> list[LazyPlaceholder]:
    """Every new placeholder line that stands for deleted document code (see the module rules)."""
    if document == new_text:
        return []
    old = [line.rstrip("\r") for line in document.split("\n")]
    new = [line.rstrip("\r") for line in new_text.split("\n")]
    known = {line.strip() for line in old}
    candidates = [j for j, line in enumerate(new) if line.strip() not in known and looks_like_placeholder(line)]
    if not candidates:
        return []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    found: list[LazyPlaceholder] = []
    wanted = set(candidates)
    for group in _groups(matcher.get_opcodes(), old, new):
        deleted = [i for _, i1, i2, _, _ in group for i in range(i1, i2) if old[i].strip()]
        if not deleted:
            continue
        for _, _, _, j1, j2 in group:
            for j in range(j1, j2):
                if j in wanted:
                    found.append(LazyPlaceholder(j + 1, new[j].strip(), len(deleted), deleted[0] + 1))
    if found:
        return found
    # Repeated lines can make the diff put the deletion in another hunk; what counts is that code
    # lines are missing from the result at all (as a multiset) while a new placeholder appeared.
    missing = Counter(line.strip() for line in old if line.strip()) - Counter(line.strip() for line in new)
    if not missing:
        return []
    first = next(i for i, line in enumerate(old) if line.strip() in missing)
    total = sum(missing.values())
    return [LazyPlaceholder(j + 1, new[j].strip(), total, first + 1) for j in candidates]


def refusal_message(found: list[LazyPlaceholder], *, how_to_override: str = "") -> str:
    """One message naming the placeholder(s) and the code they would delete, and what to do."""
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (f"not applied: the edit writes the placeholder {first.text!r} at line {first.line}{more} where "
            f"{first.deleted} line(s) of code from line {first.first_deleted} on would be deleted; the model "
            "elided code instead of copying it. Rephrase the instruction, edit a smaller range, or apply the "
            "previewed diff by hand" + (f"; {how_to_override}" if how_to_override else "") + ".")
