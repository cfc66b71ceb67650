"""Document sync bookkeeping: open/change/close that never crashes and never lies about identity.

Owns the ``textDocument/didOpen|didChange|didClose`` handlers (a mixin for
:class:`cad_lsp.protocol.CadProtocol`) and the per-URI **generation** counter.

* The generation increases on every open, change and close of a URI, and on any sync
  notification for it that could not be read. An edit snapshot records it; the edit is applied
  only if the generation is unchanged. Version numbers alone are not an identity: a document
  closed and reopened during a decode starts again at version 1 with new text, and a client may
  send a non-increasing version (that stale-edit case deleted lines of a reopened 2-line file).
* ``didChange``/``didClose`` for a URI that is not open are logged and ignored (pygls raised
  ``KeyError``, which the client showed as "Error in server"); a non-increasing ``didChange``
  version is logged and the text is still taken (full sync: the client's text is the truth).
* A sync notification whose params do not fit the LSP types is logged; if it names a URI, that
  document's generation is bumped, so no edit is applied to text the server may have missed.
* Every open and applied change restarts the document's warm-up timer (``cad_lsp.warmup``); a close
  drops it.
"""
from __future__ import annotations

import logging
from urllib.parse import unquote

from lsprotocol import types
from pygls.protocol.language_server import lsp_method

from . import warmup

__all__ = ["DocumentSyncMixin"]

log = logging.getLogger(__name__)

_SYNC_METHODS = (types.TEXT_DOCUMENT_DID_OPEN, types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_DID_CLOSE)


class DocumentSyncMixin:
    """Open/change/close handlers plus :meth:`generation`; mixed into the protocol class."""

    _generations: dict[str, int]

    def generation(self, uri: str) -> int:
        return self._counts().get(unquote(uri), 0)

    def bump_generation(self, uri: str) -> None:
        counts = self._counts()
        key = unquote(uri)
        counts[key] = counts.get(key, 0) + 1

    def _counts(self) -> dict[str, int]:
        try:
            return self._generations
        except AttributeError:
            self._generations = {}
            return self._generations

    def _warn(self, message: str) -> None:
        log.warning(message)
        server = getattr(self, "_server", None)
        if server is not None and hasattr(server, "log"):
            server.log(message, types.MessageType.Warning)

    def on_invalid_notification(self, data: dict, reason: str) -> None:
        method = data.get("method")
        params = data.get("params")
        uri = None
        if isinstance(params, dict) and isinstance(params.get("textDocument"), dict):
            uri = params["textDocument"].get("uri")
        if method in _SYNC_METHODS and isinstance(uri, str):
            self.bump_generation(uri)
            self._warn(f"ignored {method} for {uri} with invalid params ({reason}); edits of that document "
                       "that are in progress will be discarded")
        else:
            self._warn(f"ignored notification {method!r} with invalid params: {reason}")

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        self.bump_generation(params.text_document.uri)
        self.workspace.put_text_document(params.text_document)
        self._schedule_warm(params.text_document.uri)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        document = self.workspace.text_documents.get(unquote(uri))
        if document is None:
            self._warn(f"ignored didChange for {uri}: it is not open (send didOpen first)")
            return
        self.bump_generation(uri)
        version = params.text_document.version
        if document.version is not None and version <= document.version:
            self._warn(f"didChange for {uri} has version {version}, not above the current {document.version}; "
                       "text taken, edits in progress for it will be discarded")
        try:
            for change in params.content_changes:
                self.workspace.update_text_document(params.text_document, change)
        except Exception as exc:  # noqa: BLE001 - e.g. a range outside the document
            self._warn(f"didChange for {uri} could not be applied ({type(exc).__name__}: {exc}); the server's "
                       "copy may differ from the editor's: close and reopen the document")
            return
        self._schedule_warm(uri)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        if self.workspace.text_documents.get(unquote(uri)) is None:
            self._warn(f"ignored didClose for {uri}: it is not open")
            return
        self.bump_generation(uri)
        self.workspace.remove_text_document(uri)
        server = getattr(self, "_server", None)
        if server is not None:
            warmup.forget(server, uri)

    def _schedule_warm(self, uri: str) -> None:
        """Prefill the document's prompt once it stays unchanged for a moment (``cad_lsp.warmup``)."""
        server = getattr(self, "_server", None)
        if server is None:
            return
        try:
            warmup.schedule(server, uri)
        except Exception:  # noqa: BLE001 - an optimisation must never break document sync
            log.exception("could not schedule the warm-up of %s", uri)
