"""Line-ending and final-newline preservation for clients that rewrite files.

Owns: turning file bytes into the text the engine/server sees, and turning the edited text
back into bytes in the file's own style. A file whose line breaks are all CRLF is shown to the
engine with LF and converted back to CRLF afterwards (so generated lines get CRLF too). A file
with mixed endings is passed through untouched. Whether the file ended with a newline is kept:
a missing final newline stays missing, a present one stays present.
"""
from __future__ import annotations

from dataclasses import dataclass


class NotTextError(ValueError):
    """The file is not UTF-8 text (or holds NUL bytes, i.e. binary), so cad-apply will not edit it."""


@dataclass(frozen=True)
class TextStyle:
    crlf: bool             # every line break in the file was CRLF
    final_newline: bool    # the file ended with a line break
    bom: bool              # the file started with a UTF-8 byte-order mark


def decode(data: bytes, *, where: str = "<bytes>") -> tuple[str, TextStyle]:
    """Bytes of a file → (text for the engine, the style to restore)."""
    bom = data.startswith(b"\xef\xbb\xbf")
    if bom:
        data = data[3:]
    nul = data.find(b"\x00")
    if nul >= 0:  # NUL never occurs in source text (git's binary test); editing would corrupt the file
        raise NotTextError(f"{where}: binary file (NUL byte at offset {nul}); skipped: cad-apply edits text files only")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start}); skipped") from exc
    lf = text.count("\n")
    crlf = lf > 0 and text.count("\r\n") == lf
    if crlf:
        text = text.replace("\r\n", "\n")
    return text, TextStyle(crlf=crlf, final_newline=text.endswith("\n"), bom=bom)


def encode(text: str, style: TextStyle) -> bytes:
    """Edited text → bytes in the original file's style."""
    if style.final_newline and text and not text.endswith("\n"):
        text += "\n"
    elif not style.final_newline:
        while text.endswith("\n"):
            text = text[:-1]
    if style.crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    data = text.encode("utf-8")
    return (b"\xef\xbb\xbf" + data) if style.bom else data
