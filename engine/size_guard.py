"""Refuse an edit whose document or instruction cannot fit the model's context — before tokenizing it all.

Owns a cheap, conservative pre-check that ``EditEngine.edit`` runs once the model is loaded, before
the strategy renders anything (so the LSP server, ``cad-apply`` and every other caller get it). The
decoders render the whole prompt (document with line numbers) and tokenize all of it before their
own context check: a 10 MB document took 38.9 s to be refused (holding the LSP server's only engine
worker; an 0.9 MB file cost ``cad-apply`` 8 s), and a 100 kB instruction was reported as "the
document is too long".

Token counts here are lower bounds, so nothing the engine would accept is refused:

* ``len(text) // longest_token`` (no token covers more characters than the longest vocabulary
  entry, special tokens included) refuses huge inputs without tokenizing anything;
* otherwise the text is tokenized in newline-aligned chunks, stopping as soon as the count
  (minus one token per chunk boundary, the most a split can add) is over the context.

The engine itself needs the prompt (at least document + instruction tokens) plus a second
copy of the document, so its exact check stays the authority for inputs near the limit. The
error is the engine's ``ContextOverflowError`` type (clients key on ``data.error``) with a
message that blames the right input. Models without a tokenizer vocabulary or an integer
``context_length`` (a serving engine behind a URL, test fakes) are not checked.
"""
from __future__ import annotations

from typing import Any

from engine.errors import ContextOverflowError

__all__ = ["check_size", "token_lower_bound"]

_CHUNK_CHARS = 16384
_longest: dict[int, int] = {}


def _longest_token(tokenizer: Any) -> int:
    key = id(tokenizer)
    if key not in _longest:
        vocab = tokenizer.get_vocab()
        _longest[key] = max((len(token) for token in vocab), default=1) or 1
    return _longest[key]


def _chunks(text: str):
    start = 0
    while start < len(text):
        end = min(len(text), start + _CHUNK_CHARS)
        if end < len(text):
            newline = text.rfind("\n", start, end)
            if newline > start:
                end = newline + 1
        yield text[start:end]
        start = end


def token_lower_bound(tokenizer: Any, text: str, limit: int) -> int:
    """At most the number of tokens ``text`` encodes to; exact-ish once it exceeds ``limit``."""
    if not text:
        return 0
    bound = len(text) // _longest_token(tokenizer)
    if bound > limit or len(text.encode("utf-8", "surrogatepass")) <= limit:
        return bound  # over for sure, or too short to matter (a token is at least one byte)
    count = pieces = 0
    for piece in _chunks(text):
        count += len(tokenizer.encode(piece, add_special_tokens=False))
        pieces += 1
        if count - pieces > limit:
            break
    return max(bound, count - pieces)


def _edited_text(request: Any) -> str:
    if request.line_range is None:
        return request.document
    first, last = request.line_range
    return "\n".join(request.document.split("\n")[first - 1:last])


def check_size(loaded: Any, request: Any) -> None:
    """Raise ``ContextOverflowError`` when ``request`` certainly cannot fit ``loaded``'s context
    (see module doc)."""
    tokenizer = getattr(loaded, "tokenizer", None)
    context = getattr(loaded, "context_length", None)
    if tokenizer is None or not isinstance(context, int) or not hasattr(tokenizer, "get_vocab"):
        return
    try:
        text = _edited_text(request)
        instruction = token_lower_bound(tokenizer, request.instruction, context)
        document = token_lower_bound(tokenizer, text, context)
    except Exception:  # noqa: BLE001 - leave odd inputs to the engine's own validation
        return
    if instruction + document <= context:
        return
    scope = "selected range" if request.line_range else "document"
    if instruction > document:
        also = f" (the {scope} at least {document} more)" if document else ""
        message = (f"the instruction is too long for the model: it alone takes at least {instruction} tokens"
                   f"{also} and the context window holds {context}. "
                   f"Shorten the instruction (it has {len(request.instruction)} characters).")
        what = "instruction"
    else:
        also = f" (the instruction at least {instruction} more)" if instruction else ""
        message = (f"the {scope} is too long for the model: it alone takes at least {document} tokens"
                   f"{also} and the context window holds {context}. "
                   "Select a smaller range of lines and edit that range only (a range-scoped edit), "
                   "or use a model with a longer context.")
        what = scope
    error = ContextOverflowError(instruction + document, context, 0, what=what)
    error.args = (message,)
    raise error
