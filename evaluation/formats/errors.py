"""The typed error every edit format raises when its text cannot be parsed or applied."""
from __future__ import annotations


class FormatApplyError(ValueError):
    """Format ``fmt`` could not parse or apply an edit; the message says what and where."""

    def __init__(self, fmt: str, message: str):
        self.fmt = fmt
        super().__init__(f"{fmt}: {message}")
