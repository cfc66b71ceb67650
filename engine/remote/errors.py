"""Errors of the remote backend; every one is an ``engine.errors.EngineError`` whose message says how to fix it."""
from __future__ import annotations

from engine.errors import EngineError


class RemoteError(EngineError):
    """A serving engine could not do what an edit needs."""


class RemoteConnectionError(RemoteError):
    """The server cannot be reached (wrong URL, not started, gone) after the retries."""


class RemoteTimeoutError(RemoteError):
    """The server did not answer within the request timeout."""


class RemoteHTTPError(RemoteError):
    """The server answered with an HTTP error status."""

    def __init__(self, status: int, message: str, url: str):
        self.status, self.detail, self.url = status, message, url
        super().__init__(f"{url}: HTTP {status}: {message}")


class RemoteModelError(RemoteError):
    """The server does not serve the named model (or serves several and none was named)."""


class GrammarUnsupportedError(RemoteError):
    """The server ignores or rejects the grammar constraint, so programs cannot be kept in the grammar."""


class RemoteProtocolError(RemoteError):
    """The server's answer is not what an OpenAI-compatible completions endpoint returns."""
