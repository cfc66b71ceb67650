"""Everyday edits: what editor users ask of a file, in file types the training data never had.

    cases = everyday_cases()     # list[EverydayCase], fixed, hand-written

The synthetic test splits measure the task families the model was trained on, in the languages it
was mined from. This corpus is the other half of "tried as a new user would": short, ordinary files
(YAML, TOML, JSON, INI, shell, Dockerfile, Makefile, Markdown, HTML, CSS, SQL, Lua, PHP, Kotlin,
Swift, Perl, Elixir, R) and the plain requests people type ("Change the port to 8080", "Use npm ci
instead of npm install", "Remove the debug print"). None of these file types is mined by
``cad-train data`` (``training.langs``), and nothing here may ever be trained on.

Each request has one right answer: the gold is the document with the case's ``edits`` applied, each
``(old, new)`` replacing the one occurrence of ``old`` (``rename`` kinds replace every whole-word
occurrence); a ``noop`` case's gold is the document itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from evaluation.everyday_data import RAW

__all__ = ["EverydayCase", "everyday_cases"]


@dataclass(frozen=True)
class EverydayCase:
    case_id: str
    filename: str       # its suffix names the file type
    kind: str           # setting | replace | rename | delete | insert | fix | noop
    instruction: str
    document: str
    gold: str

    @property
    def file_type(self) -> str:
        name = self.filename.rsplit("/", 1)[-1]
        return name.rsplit(".", 1)[-1] if "." in name else name


def _apply(document: str, kind: str, edits: list[tuple[str, str]]) -> str:
    text = document
    for old, new in edits:
        if kind == "rename":
            pattern = rf"(?<![\w$]){re.escape(old)}(?![\w])"
            if not re.search(pattern, text):
                raise ValueError(f"rename: {old!r} is not in the document")
            text = re.sub(pattern, new, text)
            continue
        if text.count(old) != 1:
            raise ValueError(f"{old!r} occurs {text.count(old)} times; an edit must name one place")
        text = text.replace(old, new)
    return text


def everyday_cases() -> list[EverydayCase]:
    """The corpus, in a fixed order (see module doc); raises ValueError if a case's edits are ambiguous."""
    cases = []
    for case_id, filename, kind, instruction, document, edits in RAW:
        gold = _apply(document, kind, edits)
        if (gold == document) != (kind == "noop"):
            raise ValueError(f"{case_id}: only a noop case leaves the document unchanged")
        cases.append(EverydayCase(case_id, filename, kind, instruction, document, gold))
    return cases
