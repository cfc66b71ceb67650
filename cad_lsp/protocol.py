"""The pygls protocol subclass: exposes ``workDoneToken`` and ``$/cancelRequest`` to commands.

pygls runs command handlers under its built-in ``workspace/executeCommand`` handler, which
passes only ``arguments``; we keep the full ``ExecuteCommandParams`` in a context variable
(the handler's task copies the context) so commands can honour the client's
``workDoneToken``. pygls answers ``$/cancelRequest`` by cancelling the request's future,
which a running coroutine never sees; we also set the cancel event registered for that
request id (:meth:`CadLanguageServer.cancel_request`), so the decode stops within one forward.
"""
from __future__ import annotations

import contextvars

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

__all__ = ["CadProtocol", "COMMAND_PARAMS"]

COMMAND_PARAMS: contextvars.ContextVar[types.ExecuteCommandParams | None] = contextvars.ContextVar(
    "cad_command_params", default=None)


class CadProtocol(LanguageServerProtocol):
    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams):
        COMMAND_PARAMS.set(params)
        return (yield from super().lsp_workspace__execute_command(params))

    def _handle_cancel_notification(self, msg_id):
        super()._handle_cancel_notification(msg_id)
        cancel = getattr(self._server, "cancel_request", None)
        if cancel is not None:
            cancel(msg_id)
