"""Versioned ``workspace/applyEdit``: apply only to the document that was decoded, and say what happened.

Owns the apply step:

* :func:`apply_versioned` asks :func:`cad_lsp.documents.changed_since` whether the document is
  still the snapshot (version, document-sync generation and text) and DISCARDS the edit when it
  is not (the outcome says why; nothing is sent). Otherwise it sends a ``TextDocumentEdit`` whose
  ``OptionalVersionedTextDocumentIdentifier`` carries the snapshot's version, so the client also
  rejects it if the document moved on in transit.
  If it changed only by edits that do not overlap the lines the edit rewrites (typing elsewhere),
  the edits are rebased onto the current text and sent against the current version instead
  (:mod:`cad_lsp.rebase`); an overlap discards, with a message naming the lines. Clients without
  ``workspace.workspaceEdit.documentChanges`` get a plain ``changes`` map.
* The client's answer is awaited for at most ``timeout`` seconds (setting
  ``applyEditTimeout``): a client that never answers used to wedge the command forever. No
  answer, an error answer or an answer that is not an ``ApplyWorkspaceEditResult`` give an
  outcome with ``unconfirmed=True`` whose message says the edit may or may not have been applied.
* While the request is pending its command's id is in ``protocol.applying``: a cancel then no
  longer pretends to stop the edit (see :mod:`cad_lsp.protocol`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .documents import DocumentUnavailableError, Snapshot, changed_since
from .protocol import ClientTimeoutError
from .rebase import rebase_onto_current

__all__ = ["DocumentUnavailableError", "Snapshot", "ApplyOutcome", "apply_versioned", "client_can_apply_edits"]


@dataclass(frozen=True)
class ApplyOutcome:
    applied: bool
    message: str
    discarded: bool = False    # the document changed while decoding; nothing was sent
    unconfirmed: bool = False  # sent, but the client's answer is missing or unreadable


def client_can_apply_edits(ls: Any) -> bool:
    workspace = getattr(ls.client_capabilities, "workspace", None)
    return bool(workspace is not None and workspace.apply_edit)


def _supports_document_changes(ls: Any) -> bool:
    workspace = getattr(ls.client_capabilities, "workspace", None)
    edit = getattr(workspace, "workspace_edit", None) if workspace else None
    return bool(edit is not None and edit.document_changes)


async def apply_versioned(ls: Any, snap: Snapshot, edits: Sequence[types.TextEdit], label: str, *,
                          timeout: float, request_id: Any = None) -> ApplyOutcome:
    """Send the edits for ``snap`` unless the document changed since; never to another document."""
    reason = await changed_since(ls, snap)
    rebased_from = None
    if reason is not None:  # typing elsewhere keeps the edit: rebase it (cad_lsp.rebase)
        rebased = rebase_onto_current(ls, snap, edits)
        if rebased.edits is None:
            return ApplyOutcome(False, f"{snap.uri} changed while decoding ({reason}; {rebased.why}); the edit "
                                       "was discarded, run it again on the current text", discarded=True)
        rebased_from, snap, edits = snap.version, rebased.snapshot, rebased.edits
    if not edits:
        return ApplyOutcome(True, "no change: the edit reproduces the document")
    if _supports_document_changes(ls):
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=snap.uri, version=snap.version)
        workspace_edit = types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(text_document=identifier, edits=list(edits))])
    else:
        workspace_edit = types.WorkspaceEdit(changes={snap.uri: list(edits)})
    params = types.ApplyWorkspaceEditParams(edit=workspace_edit, label=label)
    unknown = "whether the client applied the edit is unknown: check the document (undo if it is wrong)"
    protocol = ls.protocol
    if request_id is not None:
        protocol.applying.add(request_id)
    try:
        result = await protocol.request(types.WORKSPACE_APPLY_EDIT, params, timeout)
    except ClientTimeoutError as exc:
        return ApplyOutcome(False, f"{exc}; {unknown}", unconfirmed=True)
    except JsonRpcException as exc:
        return ApplyOutcome(False, f"the client answered workspace/applyEdit with an error ({exc.message}); "
                                   f"{unknown}", unconfirmed=True)
    finally:
        protocol.applying.discard(request_id)
    if not isinstance(result, types.ApplyWorkspaceEditResult):
        return ApplyOutcome(False, f"the client's answer to workspace/applyEdit is not an "
                                   f"ApplyWorkspaceEditResult ({result!r:.100}); {unknown}", unconfirmed=True)
    if result.applied:
        rebase_note = "" if rebased_from is None else f", rebased over your changes since version {rebased_from}"
        return ApplyOutcome(True, f"applied {len(edits)} edit(s) to {snap.uri} (version {snap.version}{rebase_note})")
    return ApplyOutcome(False, f"the client did not apply the edit: {result.failure_reason or 'no reason given'}")
