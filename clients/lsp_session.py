"""A small reusable async LSP client for the cad server over stdio (used by cad-apply
--via-lsp and cad-bench).

Owns: spawning `python -m cad_lsp`, the initialize/shutdown handshake, keeping the client's own
copy of each opened document (text + version), answering the server's requests
(`workspace/applyEdit` — applied to our copy, versions checked, then `didChange` sent back;
`window/workDoneProgress/create`; `workspace/configuration`), draining the server's stderr, and
the two cad commands (`cad.applyEdit`, `cad.previewEdit`).
"""
from __future__ import annotations

import asyncio
import collections
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from clients.text_edits import Edit, apply_edits

REPO_ROOT = Path(__file__).resolve().parent.parent


class LspSessionError(RuntimeError):
    """The server could not be started, answered badly, or died; message has its stderr tail."""


@dataclass
class OpenDoc:
    uri: str
    text: str
    version: int
    language_id: str
    applied_edits: int = 0
    last_apply_at: float | None = None   # monotonic time the last workspace/applyEdit arrived


@dataclass
class CommandOutcome:
    """What one cad.applyEdit / cad.previewEdit produced."""
    result: Any                    # the command's return value, as plain data
    text: str                      # our copy of the document after any applied edit
    latency_s: float               # request sent → response received
    applied: bool                  # a workspace/applyEdit for this document arrived and applied


def server_command() -> list[str]:
    """The default server command: this interpreter running the cad_lsp package."""
    return [sys.executable, "-m", "cad_lsp"]


def _plain(value: Any) -> Any:
    """Command results may come back as attrs objects or dicts; normalise to plain data."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "_asdict"):
        return _plain(value._asdict())
    if hasattr(value, "__attrs_attrs__"):
        return {a.name: _plain(getattr(value, a.name)) for a in value.__attrs_attrs__}
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return value


class LspSession:
    """One server process and the documents this client has open in it."""

    def __init__(self, command: list[str] | None = None, *, settings: dict | None = None,
                 root_path: Path | None = None, env: dict | None = None,
                 on_stderr: Callable[[str], None] | None = None):
        self.command = command or server_command()
        self.settings = settings or {}
        self.root_path = Path(root_path or os.getcwd()).resolve()
        self.env = env
        self.on_stderr = on_stderr
        self.docs: dict[str, OpenDoc] = {}
        self.messages: list[str] = []            # window/showMessage + logMessage text
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self.client: LanguageClient | None = None
        self._stderr_task: asyncio.Task | None = None
        self._apply_waiters: dict[str, list[asyncio.Future]] = {}

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self, timeout_s: float = 300.0) -> types.InitializeResult:
        client = LanguageClient("cad-clients", "0.1.0")
        self.client = client
        self._register_handlers(client)
        env = dict(os.environ if self.env is None else self.env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        try:
            await client.start_io(*self.command, env=env)
        except OSError as exc:
            raise LspSessionError(f"cannot start server {self.command!r}: {exc}") from exc
        server = client._server
        if server is not None and server.stderr is not None:
            self._stderr_task = asyncio.create_task(self._drain_stderr(server.stderr))
        params = types.InitializeParams(
            process_id=os.getpid(),
            root_uri=self.root_path.as_uri(),
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    apply_edit=True,
                    configuration=True,
                    workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
                ),
                window=types.WindowClientCapabilities(work_done_progress=True),
                general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
            ),
            initialization_options=self.settings or None,
            client_info=types.ClientInfo(name="cad-clients", version="0.1.0"),
        )
        try:
            result = await asyncio.wait_for(client.initialize_async(params), timeout_s)
        except Exception as exc:
            raise LspSessionError(f"server did not initialize: {exc!r}{self._stderr_hint()}") from exc
        client.initialized(types.InitializedParams())
        if self.settings:
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=self.settings))
        return result

    async def stop(self, timeout_s: float = 10.0) -> None:
        client = self.client
        if client is None:
            return
        self.client = None
        server = client._server
        try:
            if server is not None and server.returncode is None:
                await asyncio.wait_for(client.shutdown_async(None), timeout_s)
                client.exit(None)
                await asyncio.wait_for(server.wait(), timeout_s)
        except Exception:
            pass
        if server is not None and server.returncode is None:
            server.kill()
            await server.wait()
        try:
            await asyncio.wait_for(client.stop(), timeout_s)
        except Exception:
            pass
        if self._stderr_task is not None:
            self._stderr_task.cancel()

    async def __aenter__(self) -> "LspSession":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    # ---- documents -------------------------------------------------------------------------
    def open(self, uri: str, text: str, language_id: str = "plaintext") -> OpenDoc:
        doc = OpenDoc(uri, text, 1, language_id)
        self.docs[uri] = doc
        self._client().text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)))
        return doc

    def close(self, uri: str) -> None:
        self.docs.pop(uri, None)
        self._client().text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    # ---- cad commands ----------------------------------------------------------------------
    async def execute(self, command: str, args: dict, timeout_s: float | None = None) -> tuple[Any, float]:
        params = types.ExecuteCommandParams(command=command, arguments=[args])
        start = time.monotonic()
        try:
            result = await asyncio.wait_for(self._client().workspace_execute_command_async(params), timeout_s)
        except asyncio.TimeoutError as exc:
            raise LspSessionError(f"{command} timed out after {timeout_s}s") from exc
        except LspSessionError:
            raise
        except Exception as exc:
            raise LspSessionError(f"{command} failed: {exc}{self._stderr_hint()}") from exc
        return _plain(result), time.monotonic() - start

    async def apply_edit(self, uri: str, instruction: str, *, range: dict | None = None,
                         strategy: str | None = None, timeout_s: float | None = None) -> CommandOutcome:
        """cad.applyEdit on an open document; our copy is updated from workspace/applyEdit."""
        doc = self.docs[uri]
        before = doc.applied_edits
        args = self._args(uri, instruction, range, strategy)
        result, latency = await self.execute("cad.applyEdit", args, timeout_s)
        return CommandOutcome(result, doc.text, latency, doc.applied_edits > before)

    async def preview_edit(self, uri: str, instruction: str, *, range: dict | None = None,
                           strategy: str | None = None, timeout_s: float | None = None) -> CommandOutcome:
        doc = self.docs[uri]
        args = self._args(uri, instruction, range, strategy)
        result, latency = await self.execute("cad.previewEdit", args, timeout_s)
        return CommandOutcome(result, doc.text, latency, False)

    @staticmethod
    def _args(uri, instruction, range, strategy) -> dict:
        args: dict[str, Any] = {"uri": uri, "instruction": instruction}
        if range is not None:
            args["range"] = range
        if strategy is not None:
            args["strategy"] = strategy
        return args

    # ---- server → client -------------------------------------------------------------------
    def _register_handlers(self, client: LanguageClient) -> None:
        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            try:
                self._apply_workspace_edit(params.edit)
            except Exception as exc:  # tell the server why; never crash the reader loop
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=str(exc))
            return types.ApplyWorkspaceEditResult(applied=True)

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(params):
            return None

        @client.feature(types.PROGRESS)
        def on_progress(params):
            return None

        @client.feature(types.WORKSPACE_CONFIGURATION)
        def on_configuration(params: types.ConfigurationParams):
            out = []
            for item in params.items:
                section = item.section or ""
                value: Any = self.settings
                for part in [p for p in section.split(".") if p]:
                    value = value.get(part) if isinstance(value, dict) else None
                out.append(value if value is not None else (self.settings if not section else None))
            return out

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_show(params):
            self.messages.append(params.message)

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params):
            self.messages.append(params.message)

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params):
            return None

    def _apply_workspace_edit(self, edit: types.WorkspaceEdit) -> None:
        per_doc: dict[str, tuple[int | None, list]] = {}
        for change in edit.document_changes or []:
            if not isinstance(change, types.TextDocumentEdit):
                raise ValueError(f"unsupported document change {type(change).__name__}; only text edits are accepted")
            per_doc[change.text_document.uri] = (change.text_document.version, list(change.edits))
        for uri, edits in (edit.changes or {}).items():
            per_doc.setdefault(uri, (None, list(edits)))
        for uri, (version, _edits) in per_doc.items():
            doc = self.docs.get(uri)
            if doc is None:
                raise ValueError(f"edit for {uri}, which this client has not opened")
            if version is not None and version != doc.version:
                raise ValueError(f"edit for {uri} targets version {version} but the document is at {doc.version}")
        for uri, (_version, edits) in per_doc.items():
            doc = self.docs[uri]
            doc.text = apply_edits(doc.text, [
                Edit(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character,
                     e.new_text) for e in edits])
            doc.version += 1
            doc.applied_edits += 1
            doc.last_apply_at = time.monotonic()
            self._client().text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=doc.text)]))

    # ---- helpers ---------------------------------------------------------------------------
    def _client(self) -> LanguageClient:
        if self.client is None:
            raise LspSessionError("LSP session is not started (call start() or use `async with`)")
        if self.client.stopped:
            raise LspSessionError(f"server exited{self._stderr_hint()}")
        return self.client

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while True:
            line = await stream.readline()
            if not line:
                return
            text = line.decode("utf-8", errors="replace").rstrip()
            self.stderr_tail.append(text)
            if self.on_stderr is not None:
                self.on_stderr(text)

    def _stderr_hint(self) -> str:
        if not self.stderr_tail:
            return ""
        return "\n--- server stderr (last lines) ---\n" + "\n".join(self.stderr_tail)
