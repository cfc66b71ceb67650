"""LSP base-protocol framing (``Content-Length`` headers) that survives a hostile byte stream.

Owns turning the raw input bytes into message bodies. pygls' own loop matches only the exact
header ``Content-Length: N\\r\\n``, silently ignores anything else, reads whatever length it is
told into memory (``Content-Length: 10**12`` killed the server) and, once a frame is wrong,
never finds the next one. Here:

* header names are case-insensitive (HTTP semantics, which the LSP base protocol follows);
* a header block without a usable ``Content-Length`` (missing, non-numeric) is reported and the
  stream is resynchronised at the next ``Content-Length:`` header, even when that header is
  glued to the end of the broken body (the usual shape of a wrong length);
* a frame larger than :data:`MAX_FRAME_BYTES` is never held in memory: its bytes are discarded
  as they arrive (or until a new header shows the claimed length was a lie) and it is reported
  with the request id when its first bytes name one, so the client can get an error back;
* a body that is shorter than its ``Content-Length`` and followed by the next frame's header
  (a real header line, which no valid JSON body contains) ends there at once, instead of
  swallowing the next frames and then waiting for bytes the client will never send;
* a body that is shorter than its ``Content-Length`` and then stalls is recognised when what
  arrived is already one complete JSON object (after :data:`BODY_STALL_S`), instead of waiting
  forever for bytes the client will never send.

:class:`FrameReader` only needs an async ``read_chunk() -> bytes`` (``b""`` at end of input)
and a ``wait_chunk(timeout)`` variant; it knows nothing about JSON-RPC beyond the checks above.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

__all__ = ["MAX_FRAME_BYTES", "MAX_HEADER_BYTES", "BODY_STALL_S", "Frame", "FrameReader"]

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 256 * 1024 * 1024  # a 10 MB document is ~11 MB of JSON; 256 MiB is far above any editor's
MAX_HEADER_BYTES = 8192
BODY_STALL_S = 2.0
_HEADER = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
# A header line with its real line break: never inside a valid JSON body (JSON strings cannot hold
# a raw newline, and the name is not a JSON token), so it marks where a broken body ends.
_HEADER_LINE = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_LEADING_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


@dataclass
class Frame:
    """One framed message body, or a framing problem (``body`` None, ``error`` says what)."""

    body: bytes | None = None
    error: str | None = None
    request_id: Any = None  # for an oversized frame whose first bytes name its id


class FrameReader:
    """Split a byte stream into LSP frames; see the module docstring for the recovery rules."""

    def __init__(self, read_chunk: Callable[[float | None], Awaitable[bytes | None]],
                 *, max_frame: int = MAX_FRAME_BYTES, stall: float = BODY_STALL_S):
        # read_chunk(timeout): the next bytes, b"" at end of input, None when timeout passed first
        self._read = read_chunk
        self._buffer = bytearray()
        self._eof = False
        self.max_frame = max_frame
        self.stall = stall

    async def _fill(self, timeout: float | None = None) -> bool:
        """Append the next chunk; False at end of input or when ``timeout`` passed first."""
        if self._eof:
            return False
        chunk = await self._read(timeout)
        if chunk is None:
            return False
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def _line(self) -> bytes | None:
        """The next line (with its ``\\n``); an overlong line is returned cut; None at end of input."""
        start = 0
        while True:
            index = self._buffer.find(b"\n", start)
            if index >= 0:
                line = bytes(self._buffer[:index + 1])
                del self._buffer[:index + 1]
                return line
            if len(self._buffer) > MAX_HEADER_BYTES:
                # Keep a tail: a header may begin inside it.
                match = _HEADER.search(self._buffer)
                cut = match.start() if match and match.start() > 0 else len(self._buffer) - 64
                line = bytes(self._buffer[:cut])
                del self._buffer[:cut]
                return line
            start = len(self._buffer)
            if not await self._fill():
                if not self._buffer:
                    return None
                line = bytes(self._buffer)
                self._buffer.clear()
                return line

    async def next(self) -> Frame | None:
        """The next frame or framing error; None at end of input."""
        length: bytes | None = None
        seen_header = False
        skipped = 0
        while True:
            line = await self._line()
            if line is None:
                return Frame(error=f"end of input inside a message header ({skipped} stray bytes)") \
                    if seen_header or skipped else None
            stripped = line.strip()
            if not stripped:
                if seen_header:
                    break
                continue  # blank lines between messages are harmless
            match = _HEADER.search(stripped)
            if match and match.start() > 0:  # a header glued to the tail of a broken body
                skipped += match.start()
                stripped = stripped[match.start():]
            name, sep, value = stripped.partition(b":")
            if not sep or not seen_header and not match and not _is_header_name(name):
                skipped += len(line)
                continue
            seen_header = True
            if name.strip().lower() == b"content-length":
                length = value.strip()
        prefix = f"skipped {skipped} bytes that were not an LSP message; " if skipped else ""
        if length is None:
            return Frame(error=prefix + "a header block had no Content-Length header; "
                               "its body is skipped up to the next Content-Length header")
        if not length.isdigit():
            return Frame(error=prefix + f"Content-Length {length[:40]!r} is not a number; "
                                        "the message is skipped up to the next Content-Length header")
        size = int(length)
        if size > self.max_frame:
            return await self._discard(size, prefix)
        frame = await self._body(size)
        if prefix:
            log.warning("framing: %s", prefix.rstrip("; "))
        return frame

    async def _body(self, size: int) -> Frame:
        while len(self._buffer) < size:
            cut = _HEADER_LINE.search(self._buffer)
            if cut is not None:  # a shorter body than claimed, and the next frame already began
                return self._cut_body(size, cut.start())
            timeout = self.stall if self._buffer and _complete_json(self._buffer) else None
            if not await self._fill(timeout):
                if self._eof and not self._buffer:
                    return Frame(error=f"end of input inside a {size}-byte message body")
                got = bytes(self._buffer)
                self._buffer.clear()
                if self._eof:
                    return Frame(body=got, error=f"Content-Length said {size} bytes but the input ended after {len(got)}")
                log.warning("framing: Content-Length said %d bytes but the body stopped after %d and is "
                            "complete JSON; handling it", size, len(got))
                return Frame(body=got)
        body = bytes(self._buffer[:size])
        del self._buffer[:size]
        if not _complete_json(body):
            # Content-Length too large: the body holds one JSON object and the start of the next
            # frame. Keep the object, give the rest back to the header parser.
            end = _json_prefix_end(body)
            match = _HEADER.search(body)
            if end is None and match and match.start() > 0:
                end = match.start()
            if end is not None:
                self._buffer[:0] = body[end:]
                body = body[:end]
                log.warning("framing: Content-Length %d was larger than the message (%d bytes); "
                            "resynchronised after it", size, end)
        return Frame(body=body)

    def _cut_body(self, size: int, end: int) -> Frame:
        """The claimed body ends early at a new frame's header: hand the head on, keep the rest."""
        head = bytes(self._buffer[:end])
        del self._buffer[:end]
        if _complete_json(head):
            log.warning("framing: Content-Length said %d bytes but the message ended after %d and a new "
                        "message began; handling it", size, end)
            return Frame(body=head)
        found = _LEADING_ID.match(head)
        return Frame(error=f"Content-Length said {size} bytes but a new message began after {end} bytes; "
                           "the broken message was skipped",
                     request_id=json.loads(found.group(1)) if found else None)

    async def _discard(self, size: int, prefix: str) -> Frame:
        """Drop an oversized frame without holding it; stop early at a new header."""
        head = b""
        received = 0
        remaining = size
        while remaining > 0:
            if not self._buffer:
                # A lying length: what came is one whole JSON object and then nothing more.
                small = received == len(head) and _complete_json(head)
                if not await self._fill(self.stall if small else None):
                    break
            if len(head) < 4096:
                head = (head + bytes(self._buffer[:4096 - len(head)]))
            match = _HEADER.search(self._buffer)
            if match and match.start() > 0 and match.start() <= remaining:
                del self._buffer[:match.start()]
                break
            take = min(remaining, len(self._buffer))
            del self._buffer[:take]
            remaining -= take
            received += take
        found = _LEADING_ID.match(head)
        request_id = json.loads(found.group(1)) if found else None
        return Frame(error=prefix + f"a message of {size} bytes exceeds the server's limit of "
                                    f"{self.max_frame} bytes (MAX_FRAME_BYTES); it was discarded",
                     request_id=request_id)


def _is_header_name(name: bytes) -> bool:
    return bool(name) and len(name) < 100 and re.fullmatch(rb"[A-Za-z0-9-]+", name.strip()) is not None


def _json_prefix_end(data: bytes) -> int | None:
    """Byte offset where a leading JSON object ends, when something else follows it."""
    try:
        text = data.decode("utf-8")
        start = len(text) - len(text.lstrip())
        value, end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    if not isinstance(value, dict) or not text[end:].strip():
        return None
    return len(text[:end].encode("utf-8"))


def _complete_json(data: bytes | bytearray) -> bool:
    if not data.rstrip().endswith(b"}"):
        return False
    try:
        json.loads(bytes(data))
    except ValueError:
        return False
    return True
