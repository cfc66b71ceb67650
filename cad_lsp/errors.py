"""Typed errors the server returns as JSON-RPC errors (the message says what to do)."""
from __future__ import annotations

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

__all__ = ["CommandArgumentError", "CommandRefusedError", "EngineCommandError", "REQUEST_FAILED"]

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed


class CommandArgumentError(JsonRpcInvalidParams):
    """The command's arguments are missing something or have the wrong shape."""

    def __init__(self, message: str):
        super().__init__(message=message)


class CommandRefusedError(JsonRpcException):
    """The command cannot run with this client (e.g. no ``workspace/applyEdit`` support)."""

    CODE = REQUEST_FAILED

    def __init__(self, message: str):
        super().__init__(message=message)


class EngineCommandError(JsonRpcException):
    """The engine failed; ``message`` is the engine's own message, ``data`` names the error type."""

    CODE = REQUEST_FAILED

    def __init__(self, message: str, error_type: str):
        super().__init__(message=message, data={"error": error_type})
