"""Jobs for `cad-apply --patch FILE`: one job per file a pasted diff names, the whole diff its instruction.

A diff from ``git diff``, ``diff -u`` or a chat answer names its files in its headers (``+++ b/path``,
``diff --git a/path b/path``). Each named file becomes a job whose instruction is the whole text: the
engine's diff planner (``engine.program.patch``) applies the part of it that fits that file, exactly,
without the model, and refuses (saying why) when none or several parts fit. A path is taken as written
or without git's ``a/`` / ``b/`` prefix, whichever exists below the base directory; a file the diff
creates or deletes (``/dev/null``) is not edited (``skipped`` lists it).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from clients.jobs import Job

__all__ = ["PatchJobsError", "jobs_from_patch", "read_patch"]

_NEW = re.compile(r"^\+\+\+ (?P<path>[^\t\n]+?)(?:\t.*)?\s*$")
_OLD = re.compile(r"^--- (?P<path>[^\t\n]+?)(?:\t.*)?\s*$")
_GIT = re.compile(r"^diff --git (?P<old>\S+) (?P<new>\S+)\s*$")


class PatchJobsError(ValueError):
    """The patch names no file to edit; the message says what to do instead."""


def read_patch(where: str) -> str:
    """The patch text from a file, or from stdin for ``-``."""
    if where == "-":
        return sys.stdin.read()
    return Path(where).read_text(encoding="utf-8")


def _strip_quotes(path: str) -> str:
    return path[1:-1] if len(path) > 1 and path[0] == path[-1] == '"' else path


def _resolve(name: str, base: Path) -> Path:
    name = _strip_quotes(name.strip())
    candidates = [name] + ([name[2:]] if name[:2] in ("a/", "b/") else [])
    for candidate in candidates:
        if (base / candidate).is_file():
            return base / candidate
    return base / candidates[-1]


def jobs_from_patch(text: str, base: Path) -> tuple[list[Job], list[str]]:
    """The jobs for the files ``text`` names (in order, once each), and the files it creates or
    deletes, which are skipped. Raises ``PatchJobsError`` when it names none."""
    lines = text.split("\n")
    names, skipped = [], []
    for i, line in enumerate(lines):
        new = _NEW.match(line.rstrip("\r"))
        if new is None or i == 0 or not _OLD.match(lines[i - 1].rstrip("\r")):
            continue
        old = _OLD.match(lines[i - 1].rstrip("\r")).group("path")
        path = new.group("path")
        if "/dev/null" in (old, path):
            skipped.append(old if path == "/dev/null" else path)
            continue
        names.append(path)
    if not names and not skipped:        # a git diff header without ---/+++ lines (a mode change, say)
        names = [m.group("new") for m in map(_GIT.match, lines) if m]
    if not names:
        raise PatchJobsError("the patch names no file to edit (no '--- a/path' / '+++ b/path' header lines"
                             + (f"; it only creates or deletes {', '.join(skipped)}" if skipped else "")
                             + "): give the files as FILE arguments with -i \"$(cat PATCH)\" instead")
    jobs, seen = [], set()
    for name in names:
        path = _resolve(name, base)
        if path not in seen:
            seen.add(path)
            jobs.append(Job(path, text))
    return jobs, skipped
