"""Document snapshots: the text an edit decodes, where it may come from, and whether it is still current.

Owns two rules:

* **Unopened documents are read from disk only inside the workspace.** The client names a URI;
  if the document is not open, the server reads the file only when it is a ``file:`` URI whose
  real path (symlinks resolved) lies inside the client's ``rootUri``/``workspaceFolders``, is a
  regular file (not a FIFO, device or directory: opening a FIFO blocked the event loop forever)
  of at most :data:`MAX_DISK_BYTES`, and is UTF-8 text. The read runs in a thread, never on the
  event loop. Anything else is refused with a message that says to open the document first.
  Why not refuse unopened documents outright: ``cad-apply --via-lsp`` and scripted clients edit
  files they never open, and the workspace is exactly what the user gave the server.
* **Identity.** A :class:`Snapshot` records text, version and the document-sync generation
  (:mod:`cad_lsp.document_sync`); :func:`changed_since` says why an edit must be discarded
  (another version, another generation: closed/reopened/changed, or other text), so an edit is
  never applied to a document other than the one decoded.
"""
from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from pygls.uris import to_fs_path, uri_scheme

__all__ = ["MAX_DISK_BYTES", "DocumentUnavailableError", "Snapshot", "take_snapshot", "changed_since",
           "open_text"]

MAX_DISK_BYTES = 64 * 1024 * 1024


class DocumentUnavailableError(LookupError):
    """The document is not open and may not (or cannot) be read from disk; the message says why."""


@dataclass(frozen=True)
class Snapshot:
    uri: str
    text: str
    version: int | None      # None: not open in the client (read from disk)
    generation: int = 0


def open_text(ls: Any, uri: str) -> tuple[str, int | None] | None:
    """(text, version) of an open document, else None."""
    document = ls.workspace.text_documents.get(unquote(uri))
    return None if document is None else (document.source, document.version)


def _roots(ls: Any) -> list[str]:
    uris = [folder.uri for folder in ls.workspace.folders.values()]
    if ls.workspace.root_uri:
        uris.append(ls.workspace.root_uri)
    roots = []
    for uri in uris:
        path = to_fs_path(uri) if uri_scheme(uri) == "file" else None
        if path:
            roots.append(os.path.realpath(path))
    return roots


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _read_regular(path: str, uri: str) -> str:
    hint = "open the document in the editor (textDocument/didOpen) and run the command again"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise DocumentUnavailableError(f"{uri} is not open in the editor and cannot be read from disk "
                                       f"({exc.strerror}); {hint}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DocumentUnavailableError(f"{uri} is not open in the editor and is not a regular file "
                                           f"(a FIFO, device or directory); {hint}")
        if st.st_size > MAX_DISK_BYTES:
            raise DocumentUnavailableError(f"{uri} is {st.st_size} bytes, above the server's limit of "
                                           f"{MAX_DISK_BYTES} for unopened files; select a range in an open editor")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if sum(map(len, chunks)) > MAX_DISK_BYTES:
                raise DocumentUnavailableError(f"{uri} grew past {MAX_DISK_BYTES} bytes while being read")
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if b"\0" in data:
        raise DocumentUnavailableError(f"{uri} looks binary (it contains NUL bytes); refusing to edit it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentUnavailableError(f"{uri} is not UTF-8 text (byte {exc.start}); {hint}") from None


async def read_unopened(ls: Any, uri: str) -> str:
    """The text of an unopened ``file:`` document inside the workspace (see the module docstring)."""
    hint = "open the document in the editor (textDocument/didOpen) and run the command again"
    path = to_fs_path(uri) if uri_scheme(uri) == "file" else None
    if not path:
        raise DocumentUnavailableError(f"{uri} is not open in the editor and is not a file: URI; {hint}")
    roots = _roots(ls)
    real = os.path.realpath(path)
    if not roots:
        raise DocumentUnavailableError(
            f"{uri} is not open in the editor, and the client gave no rootUri/workspaceFolders, so the "
            f"server reads no files from disk; {hint}")
    if not _inside(real, roots):
        raise DocumentUnavailableError(
            f"{uri} is not open in the editor and lies outside the workspace folders ({', '.join(roots)}); "
            f"the server reads unopened files only inside them. {hint}")
    return await asyncio.to_thread(_read_regular, real, uri)


async def take_snapshot(ls: Any, uri: str) -> Snapshot:
    generation = ls.protocol.generation(uri)
    opened = open_text(ls, uri)
    if opened is not None:
        return Snapshot(uri, opened[0], opened[1], generation)
    return Snapshot(uri, await read_unopened(ls, uri), None, generation)


async def changed_since(ls: Any, snap: Snapshot) -> str | None:
    """Why the document is no longer the one ``snap`` captured, or None when it still is."""
    opened = open_text(ls, snap.uri)
    generation = ls.protocol.generation(snap.uri)
    if snap.version is None:
        if opened is not None:
            return "it was opened in the editor while decoding"
        try:
            text = await read_unopened(ls, snap.uri)
        except DocumentUnavailableError as exc:
            return f"it can no longer be read ({exc})"
        return None if text == snap.text else "the file changed on disk while decoding"
    if opened is None:
        return "it was closed while decoding"
    text, version = opened
    if version != snap.version:
        return f"version {snap.version} -> {version}"
    if generation != snap.generation:
        return "it was closed and reopened, or re-sent, while decoding (same version number, new document)"
    if text != snap.text:
        return "its text differs from the decoded text"
    return None
