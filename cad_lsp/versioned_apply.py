"""Versioned ``workspace/applyEdit``: apply only to the document version that was decoded.

Owns snapshots and the apply step:

* :func:`snapshot` captures (uri, text, version) before the decode starts;
* :func:`apply_versioned` checks the current version against the snapshot's and DISCARDS
  the edit when they differ (the outcome says so; nothing is sent); otherwise it sends a
  ``TextDocumentEdit`` whose ``OptionalVersionedTextDocumentIdentifier`` carries the
  snapshot's version, so the client also rejects it if the document moved on in transit.
  Clients without ``workspace.workspaceEdit.documentChanges`` get a plain ``changes`` map
  (the version check above still ran).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from lsprotocol import types

__all__ = ["DocumentUnavailableError", "Snapshot", "ApplyOutcome", "snapshot", "apply_versioned", "client_can_apply_edits"]


@dataclass(frozen=True)
class Snapshot:
    uri: str
    text: str
    version: int | None  # None: the document is not open in the client (read from disk)


@dataclass(frozen=True)
class ApplyOutcome:
    applied: bool
    message: str
    discarded: bool = False  # the document changed while decoding


class DocumentUnavailableError(LookupError):
    """The document is neither open in the client nor readable from disk."""


def snapshot(ls: Any, uri: str) -> Snapshot:
    """The document's text and version now (an unopened file is read from disk, version None)."""
    document = ls.workspace.get_text_document(uri)
    try:
        text = document.source
    except OSError as exc:
        raise DocumentUnavailableError(
            f"{uri} is not open in the editor and cannot be read from disk ({exc}); "
            "open the document (textDocument/didOpen) before running the command") from None
    return Snapshot(uri, text, document.version)


def current_version(ls: Any, uri: str) -> int | None:
    document = ls.workspace.text_documents.get(uri)
    if document is None:
        from urllib.parse import unquote

        document = ls.workspace.text_documents.get(unquote(uri))
    return None if document is None else document.version


def client_can_apply_edits(ls: Any) -> bool:
    workspace = getattr(ls.client_capabilities, "workspace", None)
    return bool(workspace is not None and workspace.apply_edit)


def _supports_document_changes(ls: Any) -> bool:
    workspace = getattr(ls.client_capabilities, "workspace", None)
    edit = getattr(workspace, "workspace_edit", None) if workspace else None
    return bool(edit is not None and edit.document_changes)


async def apply_versioned(ls: Any, snap: Snapshot, edits: Sequence[types.TextEdit], label: str) -> ApplyOutcome:
    """Send the edits for ``snap`` unless the document changed since; never to another version."""
    now = current_version(ls, snap.uri)
    if now != snap.version:
        return ApplyOutcome(False, f"{snap.uri} changed while decoding (version {snap.version} -> {now}); "
                                   "the edit was discarded, run it again on the current text", discarded=True)
    if not edits:
        return ApplyOutcome(True, "no change: the edit reproduces the document")
    if _supports_document_changes(ls):
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=snap.uri, version=snap.version)
        workspace_edit = types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(text_document=identifier, edits=list(edits))])
    else:
        workspace_edit = types.WorkspaceEdit(changes={snap.uri: list(edits)})
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=workspace_edit, label=label))
    if result.applied:
        return ApplyOutcome(True, f"applied {len(edits)} edit(s) to {snap.uri} (version {snap.version})")
    reason = result.failure_reason or "no reason given"
    return ApplyOutcome(False, f"the client did not apply the edit: {reason}")
