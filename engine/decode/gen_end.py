"""End-of-gen detection that is robust to how a tokenizer splits ``</gen>``.

Owns one rule: a gen body ends at the first ``</gen>`` in the DECODED text of the body's tokens
(gen bodies are escaped with ``engine.program.grammar.escape``, so content never contains ``</gen>``
itself; ``</div>``, ``<generic>`` or ``a </ b`` never end a gen). When the tokens that completed
``</gen>`` are not its canonical token sequence (the literal was split differently, or the last
token overshoots past ``>``), ``GenEnd.canonical_ids`` is the sequence the cache must hold
instead: the longest prefix of the model's tokens that decodes to a prefix of the body, the rest
of the body re-tokenized, then the canonical ``</gen>`` ids. The decoder crops its cache back to
the common prefix and lets the difference ride along in its next forward.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.program.grammar import GEN_CLOSE


def decode(tokenizer, ids) -> str:
    """Decode ids to text exactly (no clean-up of spaces, special tokens kept)."""
    return tokenizer.decode(list(ids), clean_up_tokenization_spaces=False)


@dataclass(frozen=True)
class GenEnd:
    """A detected end of gen: the escaped body text and the canonical ids of body + ``</gen>``."""

    body_text: str
    canonical_ids: list[int]
    kept: int  # how many of the model's body tokens are kept unchanged


def find_gen_end(tokenizer, body_ids: list[int], gen_close_ids, *, text: str | None = None) -> GenEnd | None:
    """Return the gen end if the decoded body contains ``</gen>``, else None."""
    if text is None:
        text = decode(tokenizer, body_ids)
    cut = text.find(GEN_CLOSE)
    if cut < 0:
        return None
    body_text = text[:cut]
    kept, kept_text = 0, ""
    for k in range(len(body_ids), -1, -1):
        prefix_text = decode(tokenizer, body_ids[:k]) if k else ""
        if body_text.startswith(prefix_text):
            kept, kept_text = k, prefix_text
            break
    rest = body_text[len(kept_text):]
    rest_ids = list(tokenizer.encode(rest, add_special_tokens=False)) if rest else []
    return GenEnd(body_text=body_text, canonical_ids=[*body_ids[:kept], *rest_ids, *gen_close_ids], kept=kept)
