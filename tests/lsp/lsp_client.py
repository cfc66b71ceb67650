"""A test LSP client that drives ``python -m cad_lsp`` over real stdio.

It keeps its own copy of each open document, applies ``workspace/applyEdit`` the way an
editor does (version check, then the edits as incremental changes through pygls'
``TextDocument``, an implementation independent of ``cad_lsp.textedits``), and sends the new
text back with ``didChange``. Every applyEdit request is recorded.
"""
from __future__ import annotations

import asyncio
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Union

from lsprotocol import types
from pygls.workspace import TextDocument
from pytest_lsp import LanguageClient
from pytest_lsp.client import make_test_lsp_client

FULL_CAPS = types.ClientCapabilities(
    general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True, configuration=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)),
)
NO_APPLY_CAPS = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(apply_edit=False),
)


@dataclass
class Docs:
    texts: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    applied: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    applied_at: list[float] = field(default_factory=list)


def _fix_code_action_union(client: LanguageClient) -> None:
    """lsprotocol 2025.0.0 structures every item with a "command" key as ``Command``, even a
    ``CodeAction`` whose ``command`` is an object; a Command's ``command`` is a string."""
    converter = client.protocol._converter

    def hook(obj, _):
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], hook)


async def start_client(*server_args: str, caps=FULL_CAPS, init_options: dict | None = None) -> LanguageClient:
    client = make_test_lsp_client()
    _fix_code_action_union(client)
    docs = Docs()
    client.docs = docs  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(ls: LanguageClient, params: types.ApplyWorkspaceEditParams):
        docs.applied.append(params)
        docs.applied_at.append(time.perf_counter())
        for change in params.edit.document_changes or []:
            uri, version = change.text_document.uri, change.text_document.version
            if version is not None and version != docs.versions.get(uri):
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version mismatch")
            doc = TextDocument(uri, docs.texts[uri], version)
            starts = sorted(change.edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
            for edit in starts:
                doc.apply_change(types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text))
            set_text(ls, uri, doc.source)
        return types.ApplyWorkspaceEditResult(applied=True)

    await client.start_io(sys.executable, "-m", "cad_lsp", *server_args)
    client.init_result = await client.initialize_session(types.InitializeParams(  # type: ignore[attr-defined]
        capabilities=caps, initialization_options=init_options or {}))
    return client


def open_doc(client: LanguageClient, uri: str, text: str) -> None:
    client.docs.texts[uri] = text
    client.docs.versions[uri] = 1
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))


def set_text(client: LanguageClient, uri: str, text: str) -> None:
    """Change the document on the client and tell the server (full sync)."""
    client.docs.texts[uri] = text
    client.docs.versions[uri] += 1
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=client.docs.versions[uri]),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def execute(client: LanguageClient, command: str, args: dict, *, token: str | None = None,
            msg_id: str | None = None) -> asyncio.Future:
    """Send workspace/executeCommand; returns the response future (request id ``msg_id``)."""
    if token is not None:
        client.progress_reports.setdefault(token, [])
    params = types.ExecuteCommandParams(command=command, arguments=[args], work_done_token=token)
    return asyncio.ensure_future(client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=msg_id or str(uuid.uuid4())))


def new_token() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


async def wait_for(predicate, timeout: float = 300.0, what: str = "condition"):
    """Poll ``predicate`` on the event loop until it is truthy."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.005)
    return value


def messages(client: LanguageClient, token: str) -> list[str]:
    return [getattr(v, "message", None) or "" for v in client.progress_reports.get(token, [])]


def kinds(client: LanguageClient, token: str) -> list[str]:
    return [v.kind for v in client.progress_reports.get(token, [])]
