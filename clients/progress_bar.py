"""A small stderr progress display shared by cad-apply and cad-bench.

Owns: one-line progress. On a terminal it redraws a bar in place (`\\r`); when stderr is not a
terminal (CI logs, pipes) it prints one plain line per finished item instead, so logs stay
readable. `enabled=False` silences it.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(self, total: int, *, label: str = "", stream: TextIO | None = None,
                 enabled: bool = True, width: int = 28):
        self.total = max(total, 0)
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.width = width
        self.start = time.monotonic()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._drawn = False

    def _line(self, note: str) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        elapsed = time.monotonic() - self.start
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{self.label} [{bar}] {self.done}/{self.total} {elapsed:6.1f}s {note}"

    def advance(self, note: str = "") -> None:
        """Mark one more item finished; `note` is a short status (e.g. 'ok foo.py')."""
        self.done += 1
        if not self.enabled:
            return
        if self.tty:
            cols = 100
            self.stream.write("\r" + self._line(note)[:cols].ljust(cols))
            self._drawn = True
        else:
            self.stream.write(f"{self.label} {self.done}/{self.total} {note}\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """Print a line above the bar without corrupting it."""
        if not self.enabled:
            return
        if self.tty and self._drawn:
            self.stream.write("\r" + " " * 100 + "\r")
        self.stream.write(text + "\n")
        if self.tty and self._drawn:
            self.stream.write(self._line(""))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
