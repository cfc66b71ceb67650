"""The Copy-as-Decode language server object and its feature registration (thin handlers).

Owns :class:`CadLanguageServer` (settings, the engine worker, cancel registry, message
helpers) and :func:`build_server`, which wires LSP methods to one module per concern:
code actions (:mod:`cad_lsp.code_actions`), commands (:mod:`cad_lsp.commands`), settings
(:mod:`cad_lsp.configuration`), the protocol rules (:mod:`cad_lsp.protocol`) and the stdio
transport (:mod:`cad_lsp.transport`). Documents are synced in full (``TextDocumentSyncKind.Full``)
so the server's snapshot is byte-exact for any line-break characters.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from . import code_actions, commands, configuration, preview_cache
from .protocol import CadProtocol
from .settings import Settings
from .transport import serve_stdio
from .worker import EngineWorker

__all__ = ["CadLanguageServer", "build_server", "NAME", "VERSION"]

NAME = "cad-lsp"
VERSION = "0.1.0"
log = logging.getLogger(__name__)


class CadLanguageServer(LanguageServer):
    def __init__(self, settings: Settings | None = None, *, preload: bool = False,
                 engine_factory: Callable | None = None):
        super().__init__(NAME, VERSION, text_document_sync_kind=types.TextDocumentSyncKind.Full,
                         protocol_cls=CadProtocol)
        self.settings = settings or Settings()
        self.preload = preload
        self.worker = EngineWorker(engine_factory) if engine_factory else EngineWorker()
        self._cancels: dict[Any, threading.Event] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def position_encoding(self) -> str:
        encoding = self.workspace.position_encoding
        return str(getattr(encoding, "value", encoding) or "utf-16")

    # -- cancellation registry ($/cancelRequest -> the job's cancel event) -----------------
    def register_cancel(self, request_id: Any, event: threading.Event) -> None:
        if request_id is not None:
            self._cancels[request_id] = event

    def unregister_cancel(self, request_id: Any) -> None:
        self._cancels.pop(request_id, None)

    def cancel_request(self, request_id: Any) -> None:
        event = self._cancels.get(request_id)
        if event is not None:
            event.set()

    # -- messages -----------------------------------------------------------------------
    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        log.info(message)
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def log_threadsafe(self, message: str) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self.log, message)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_framing_error(self, message: str) -> None:
        log.warning("framing error: %s", message)
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning,
                                                       message=f"cad-lsp framing error: {message}"))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log errors outside a request (pygls showed them to the user as "Error in server")."""
        log.error("%s: %s", getattr(source, "__name__", source), error)
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                           message=f"cad-lsp: {type(error).__name__}: {error}"))
        except Exception:  # noqa: BLE001 - reporting must never raise
            pass

    # -- transport ----------------------------------------------------------------------------
    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve on stdio with the hardened transport (:mod:`cad_lsp.transport`)."""
        serve_stdio(self, stdin, stdout)


def build_server(settings: Settings | None = None, *, preload: bool = False,
                 engine_factory: Callable | None = None) -> CadLanguageServer:
    """A server with every feature registered (not started)."""
    server = CadLanguageServer(settings, preload=preload, engine_factory=engine_factory)

    @server.feature(types.INITIALIZE)
    def _initialize(ls: CadLanguageServer, params: types.InitializeParams) -> None:
        ls._loop = asyncio.get_running_loop()
        configuration.on_initialize(ls, params)

    server.feature(types.INITIALIZED)(configuration.on_initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(configuration.on_did_change_configuration)
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[code_actions.KIND]))(code_actions.code_actions)
    server.command(commands.APPLY_EDIT)(commands.apply_edit)
    server.command(commands.PREVIEW_EDIT)(commands.preview_edit)
    server.command(commands.CANCEL_ALL)(commands.cancel_all)
    server.command(preview_cache.APPLY_PREVIEW)(preview_cache.apply_preview)

    # shutdown/exit: cad_lsp.protocol (cancel the edits, stop serving) and cad_lsp.transport
    # (stop the engine thread, end the process).
    return server
