"""Syntax-breakage check: does the edit leave the document broken in a way it was not before?

Why: a small model's edit can be complete (a closed program) and still break the file: a duplicated
``def`` line, a dropped ``)``, a half-rewritten JSON value. Nothing downstream of the decoder knows
the language, and a check that needs one parser per language would say nothing about the languages
the project has never seen. So the rule is *relative*: it compares the document after the edit with
the document before, under structures the document demonstrably had.

Checks, most precise first (``CHECKS``, the registry); the first one that *applies* decides:

1. **json** applies when the document is a JSON object or array; broken when the new text is not
   (first: a JSON document also compiles as Python, which allows more).
2. **python** applies when the document compiles as Python (``compile``, nothing is run) and has
   a statement that shows it (not only bare names and literals: an empty file, ``TODO`` or a lone
   string compile too, and prove nothing); the edit breaks it when the new text does not compile.
   Text in other languages almost never compiles as Python, so no language has to be named.
3. **brackets** always applies: the edit breaks it when it changes how many ``(``/``[``/``{`` the
   document opens minus how many it closes. Each line is counted alone, skipping ``"..."`` and
   ``'...'`` strings that close on the line and ``//`` or ``#`` comments (a crude lexer, but
   every unchanged line counts the same before and after, so only the edited lines matter: an
   edit that writes balanced code, wherever the diff puts its lines, keeps the totals).

The result is advice, not a verdict on the edit's meaning (a user may ask for a change that cuts a
block): the LSP server applies the edit and shows the warning, ``cad-apply`` writes it and prints the
warning. Stdlib only.
"""
from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Callable

__all__ = ["Breakage", "CHECKS", "find_breakage", "breakage_message"]

MAX_CHARS = 2_000_000   # larger documents are not checked (the parse would cost more than it says)
_PAIRS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _PAIRS.items()}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_COMMENT = re.compile(r"(?://|(?:^|(?<=\s))#).*$")


@dataclass(frozen=True)
class Breakage:
    check: str      # the check that found it: "python", "json", "brackets"
    line: int       # 1-based line of the new text where it shows (0: unknown)
    detail: str     # what is wrong there


def _python(text: str) -> tuple[int, str] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")              # invalid escapes and the like are not breakage
            compile(text, "<document>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 0, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 0, str(exc) or type(exc).__name__
    return None


def _shows_python(text: str) -> bool:
    """Has a statement other than a bare name or literal (``_python`` already found it compiles)."""
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(not (isinstance(s, ast.Expr) and isinstance(s.value, (ast.Name, ast.Constant))) for s in body)


def _json(text: str) -> tuple[int, str] | None:
    if not text.lstrip().startswith(("{", "[")):
        return 0, "not a JSON object or array"
    try:
        json.loads(text)
    except (ValueError, RecursionError) as exc:
        return getattr(exc, "lineno", 0), getattr(exc, "msg", str(exc))
    return None


def _bracket_counts(text: str) -> dict[str, int]:
    """Per bracket kind, opened minus closed, each line counted alone (module doc)."""
    net = {k: 0 for k in _PAIRS}
    for line in text.split("\n"):
        line = _COMMENT.sub("", _STRING.sub("", line))
        for ch in line:
            kind = ch if ch in _PAIRS else _CLOSERS.get(ch)
            if kind is not None:
                net[kind] += 1 if ch in _PAIRS else -1
    return net


def _brackets(before: str, after: str) -> Breakage | None:
    old, new = _bracket_counts(before), _bracket_counts(after)
    for kind, closer in _PAIRS.items():
        delta = new[kind] - old[kind]
        if delta:
            what = f"{delta} more {kind!r} than {closer!r}" if delta > 0 else f"{-delta} more {closer!r} than {kind!r}"
            return Breakage("brackets", _first_changed_line(before, after), f"the edit writes {what}")
    return None


def _first_changed_line(before: str, after: str) -> int:
    old, new = before.split("\n"), after.split("\n")
    for i, (a, b) in enumerate(zip(old, new)):
        if a != b:
            return i + 1
    return min(len(old), len(new)) + 1


def _parser_check(name: str, parse: Callable[[str], tuple[int, str] | None],
                  shows: Callable[[str], bool] = lambda text: True):
    def check(before: str, after: str) -> Breakage | None | bool:
        if parse(before) is not None or not shows(before):
            return False                                  # the document never parsed (or proves nothing): does not apply
        found = parse(after)
        return None if found is None else Breakage(name, found[0], found[1])
    return check


# A check returns False when it does not apply to the document, else the Breakage or None.
CHECKS: list[Callable[[str, str], Breakage | None | bool]] = [
    _parser_check("json", _json),        # before python: a JSON document compiles as Python too
    _parser_check("python", _python, _shows_python),
    _brackets,
]


def find_breakage(before: str, after: str) -> Breakage | None:
    """What the edit ``before`` -> ``after`` broke (module doc), or None."""
    if before == after or len(before) > MAX_CHARS or len(after) > MAX_CHARS:
        return None
    for check in CHECKS:
        verdict = check(before, after)
        if verdict is not False:
            return verdict
    return None


def breakage_message(found: Breakage) -> str:
    """One sentence for the user: what broke, where, and that the document did not have it before."""
    where = f" at line {found.line}" if found.line else ""
    kind = {"python": "a Python syntax error", "json": "invalid JSON", "brackets": "unbalanced brackets"}[found.check]
    return (f"the edit leaves {kind}{where} that the document did not have ({found.detail}); check the "
            "result, rephrase the instruction, or edit a smaller range")
