"""Deterministic stand-in edit backends for cad-apply tests (`--engine-factory`).

`appending` — appends one marker line per edit (NOT idempotent, so a job applied twice shows);
env FAKE_EDIT_DELAY_S sleeps before each edit, FAKE_EDIT_CALLS names a file that gets one line
per call, FAKE_EDIT_FAIL=1 makes every edit fail. `touching` — rewrites the file on disk while
the edit is "computed", to exercise the changed-on-disk refusal. `truncating` — like `appending`
but its stats say the program hit the token budget. `unsure` — like `appending`, with confidence 0.4
and the engine's low-confidence warning.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from clients.edit_backends import BackendError, EditOutcome

MARKER = "# edited: {instruction}"


class AppendingBackend:
    def edit(self, text, instruction, line_range, *, path=None):
        calls = os.environ.get("FAKE_EDIT_CALLS")
        if calls:
            with open(calls, "a") as fh:
                fh.write(f"{path}\n")
        if os.environ.get("FAKE_EDIT_FAIL") == "1":
            raise BackendError(f"{path}: fake failure")
        time.sleep(float(os.environ.get("FAKE_EDIT_DELAY_S", "0")))
        lines = text.split("\n")
        at = line_range[1] if line_range else (len(lines) - 1 if lines[-1] == "" else len(lines))
        lines.insert(at, MARKER.format(instruction=instruction))
        return EditOutcome("\n".join(lines), {"fake": True})

    def close(self):
        pass


class TouchingBackend(AppendingBackend):
    def edit(self, text, instruction, line_range, *, path=None):
        Path(path).write_bytes(Path(path).read_bytes() + b"# someone else typed this\n")
        return super().edit(text, instruction, line_range, path=path)


class TruncatingBackend(AppendingBackend):
    """Like `appending`, but reports that the program hit the token budget."""

    def edit(self, text, instruction, line_range, *, path=None):
        outcome = super().edit(text, instruction, line_range, path=path)
        return EditOutcome(outcome.text, {"truncated": True})


class UnsureBackend(AppendingBackend):
    """Like `appending`, but the model was unsure (confidence 0.4) and the engine warned about it."""

    def edit(self, text, instruction, line_range, *, path=None):
        outcome = super().edit(text, instruction, line_range, path=path)
        return EditOutcome(outcome.text, {"confidence": 0.4}, ["low confidence: the model was unsure of this edit"])


def unsure(args):
    return UnsureBackend()


def truncating(args):
    return TruncatingBackend()


def appending(args):
    return AppendingBackend()


def touching(args):
    return TouchingBackend()
