"""Prompt-level Copy-as-Decode: one completion request per op on a serving engine.

``decode_program_remote(server, tokenizer, document, instruction, ...)`` keeps the program's output
as token ids and sends ``prompt ids + output ids`` with every request (so an engine with prefix
caching prefills only what was appended since the last request):

* the next op's header: a greedy request constrained by ``engine.remote.gbnf.op_grammar`` (copy
  with line indices bounded by the document | ``<gen>`` | ``</program>``, no close before the first
  op); when the model writes a copy whose end precedes its start, one follow-up request with the
  prompt extended by ``<copy lines="i-`` and the grammar ``end >= i`` (``end_grammar``), which is
  where the in-process FSM's digit mask would have led it;
* after a copy header, the copied lines are appended client-side as the in-process splice payload
  (``DocumentView.payload_ids``), never generated;
* a gen body: an unconstrained greedy request that stops at ``</gen>`` (EOS closes the gen and the
  program, as in process); the body keeps the model's own tokens up to the end and then the
  canonical ``</gen>`` ids (the in-process ``gen_end`` rule); a gen that repeats itself
  (``engine.decode.repetition``) is cut where the in-process decoder would have cut it;
* every op the client appends is spelled with the canonical tokens of ``engine.guide.tokens``, so
  the prompts are the in-process decoder's context token for token.

Budget and context exactly as in process: ``max_new_tokens`` bounds generated + structural tokens
(copied payloads are free); reaching it, or the context window, ends the program with
``truncated=True`` (the callers never apply such a program). Every loop is bounded by the budget.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from engine.program.grammar import (
    COPY_CLOSE, GEN_CLOSE, GEN_OPEN, PROGRAM_CLOSE, CopyLines, CopyTokens, Gen,
    unescape,
)
from engine.prompt import check_context, render_prompt
from engine.remote.errors import RemoteProtocolError
from engine.remote.gbnf import end_grammar, op_grammar
from engine.types import Progress

HEADER_TOKENS = 48    # max tokens of one op header (a copy tag of two 6-digit indices is ~20)
_COPY_RE = re.compile(r'<copy (lines|tokens)="([0-9]+)-([0-9]+)"/>')


@dataclass
class RemoteDecode:
    """What one remote program decode produced and cost (``requests`` = completion requests)."""

    program: tuple
    output_ids: list[int]
    prompt_tokens: int
    decoded: int = 0          # tokens the server generated
    forced: int = 0           # structural tokens appended by the client (re-spelled tags, </gen>)
    copied: int = 0           # splice payload tokens
    requests: int = 0
    truncated: bool = False
    repeating: bool = False
    cached_tokens: int = 0    # prompt tokens the server reported as served from its prefix cache
    prompt_cached: int = 0    # of those, the first request's (the edit prompt itself: a warm edit)
    per_op: list = field(default_factory=list)



def _decode(tokenizer, ids) -> str:
    return tokenizer.decode(list(ids), clean_up_tokenization_spaces=False)


def gen_body_ids(tokenizer, body_text: str, model_ids: list[int] | None) -> list[int]:
    """The body's ids as the in-process cache holds them: the model's longest prefix whose text is a
    prefix of ``body_text``, then the rest re-tokenized (``engine.decode.gen_end`` rule)."""
    model_ids = list(model_ids or [])
    for k in range(len(model_ids), -1, -1):
        prefix = _decode(tokenizer, model_ids[:k]) if k else ""
        if body_text.startswith(prefix):
            rest = body_text[len(prefix):]
            return model_ids[:k] + (list(tokenizer.encode(rest, add_special_tokens=False)) if rest else [])
    return list(tokenizer.encode(body_text, add_special_tokens=False))  # pragma: no cover - k=0 always matches


class _Decoder:
    def __init__(self, server, tokenizer, prompt, *, token_level, max_new, cancel, progress):
        from engine.guide.tokens import token_table  # imports torch (the table's masks)

        self.server, self.tok, self.view = server, tokenizer, prompt.view
        self.table = token_table(tokenizer)
        self.token_level, self.max_new = token_level, max_new
        self.cancel, self.progress = cancel, progress
        self.prompt_ids = list(prompt.ids)
        self.ops: list = []
        self.r = RemoteDecode(program=(), output_ids=[], prompt_tokens=len(self.prompt_ids))
        self.n_index = self.view.n_tokens if token_level else self.view.n_lines

    @property
    def out(self) -> list[int]:
        return self.r.output_ids

    def spent(self) -> int:
        return self.r.decoded + self.r.forced

    def room(self) -> int:
        return self.server.context_length - len(self.prompt_ids) - len(self.out)

    def request(self, extra: list[int], **kw):
        c = self.server.complete(self.prompt_ids + self.out + extra, cancel=self.cancel, **kw)
        if not self.r.requests:
            self.r.prompt_cached = min(len(self.prompt_ids), int(c.cached_tokens or 0))
        self.r.requests += 1
        self.r.cached_tokens += int(c.cached_tokens or 0)
        self.r.decoded += c.completion_tokens or len(c.token_ids or ()) or 0
        return c

    def append(self, ids, kind: str) -> None:
        self.out.extend(ids)
        setattr(self.r, kind, getattr(self.r, kind) + len(ids))

    def tick(self) -> None:
        if self.progress is not None:
            r = self.r
            self.progress(Progress(r.decoded, r.copied, r.forced, r.requests, len(self.ops)))

    def run(self) -> None:
        for _ in range(self.max_new + 2):   # every op costs at least one budget token
            if self.spent() >= self.max_new or self.room() <= 1:
                self.r.truncated = True
                return
            t0, before, reqs = time.perf_counter(), len(self.out), self.r.requests
            done = self.one_op()
            self.r.per_op.append({"kind": type(self.ops[-1]).__name__ if self.ops and not done else
                                  ("close" if done else "truncated"),
                                  "tokens": len(self.out) - before, "requests": self.r.requests - reqs,
                                  "ms": (time.perf_counter() - t0) * 1000.0})
            self.tick()
            if done or self.r.truncated:
                return
        self.r.truncated = True  # pragma: no cover - the budget ends the loop first

    def one_op(self) -> bool:
        """Decode one op; True when ``</program>`` ended the program."""
        budget = min(HEADER_TOKENS, self.max_new - self.spent(), self.room() - 1)
        grammar = op_grammar(self.n_index, has_ops=bool(self.ops), token_level=self.token_level)
        c = self.request([], max_tokens=budget, grammar=grammar)
        self.r.decoded -= c.completion_tokens or 0   # re-counted below as the canonical spelling
        text = c.text
        if text == PROGRAM_CLOSE:
            self.append(self.table.program_close, "decoded")
            return True
        if text == GEN_OPEN:
            self.append(self.table.gen_open, "decoded")
            self.gen_body()
            return False
        m = _COPY_RE.fullmatch(text)
        if m is None:
            if c.finish == "length":
                self.r.truncated = True   # the budget or the context ended the header
                return False
            raise RemoteProtocolError(f"the server returned {text!r} for a request constrained to one op header; "
                                      f"its grammar support is broken")
        start, end = int(m.group(2)), int(m.group(3))
        if end < start:
            end = self.copy_end(start)
            if end is None:
                return False
        return self.copy(start, end)

    def copy_end(self, start: int) -> int | None:
        """The follow-up request: the end index under ``end >= start`` (see module doc)."""
        opener = self.table.copy_tokens_open if self.token_level else self.table.copy_lines_open
        head = [*opener, *self.table.number_ids(start), *self.table.range_sep]
        budget = min(HEADER_TOKENS, self.max_new - self.spent() - len(head), self.room() - 1 - len(head))
        if budget < 1:
            self.r.truncated = True
            return None
        c = self.request(head, max_tokens=budget, grammar=end_grammar(start, self.n_index,
                                                                      token_level=self.token_level))
        self.r.decoded -= c.completion_tokens or 0
        m = re.fullmatch(r"([0-9]+)" + re.escape(COPY_CLOSE), c.text)
        if m is None:
            if c.finish == "length":
                self.r.truncated = True
                return None
            raise RemoteProtocolError(f"the server returned {c.text!r} for a copy end constrained to "
                                      f"{start}..{self.n_index}")
        return int(m.group(1))

    def copy(self, start: int, end: int) -> bool:
        opener = self.table.copy_tokens_open if self.token_level else self.table.copy_lines_open
        tag = [*opener, *self.table.number_ids(start), *self.table.range_sep, *self.table.number_ids(end),
               *self.table.copy_close]
        payload = self.view.payload_ids(start, end, token_level=self.token_level)
        if self.spent() + len(tag) > self.max_new or len(tag) + len(payload) >= self.room():
            self.r.truncated = True
            return False
        self.append(tag, "decoded")
        self.append(payload, "copied")
        self.ops.append(CopyTokens(start, end) if self.token_level else CopyLines(start, end))
        return False

    def gen_body(self) -> None:
        budget = min(self.max_new - self.spent(), self.room() - 2)
        if budget < 1:
            self.ops.append(Gen(""))
            self.r.truncated = True
            return
        c = self.request([], max_tokens=budget, stop=[GEN_CLOSE], stop_ids=self.table.stop_ids)
        model_ids = list(c.token_ids) if c.token_ids is not None else None
        if c.finish == "length":
            body_ids = model_ids if model_ids is not None else list(self.tok.encode(c.text, add_special_tokens=False))
            if self._repeats(body_ids, ended=False):
                return
            self.out.extend(body_ids)
            self.ops.append(Gen(unescape(c.text)))
            self.r.truncated = True
            return
        eos = c.stop_string is None and GEN_CLOSE not in c.text
        body_text = c.text.split(GEN_CLOSE, 1)[0]
        if model_ids is not None and eos:
            model_ids = [t for t in model_ids if t not in self.table.stop_ids]
        if model_ids is not None and self._repeats(model_ids, ended=True):
            return
        ids = gen_body_ids(self.tok, body_text, model_ids)
        self.out.extend(ids)
        self.append(self.table.gen_close, "forced")
        self.ops.append(Gen(unescape(body_text)))
        if eos:   # in process: EOS inside a gen closes the gen and the program
            self.append(self.table.program_close, "forced")
            raise _Closed()

    def _repeats(self, body_ids: list[int], *, ended: bool) -> bool:
        """Cut a runaway gen where the in-process decoder would have (``engine.decode.repetition``)."""
        from engine.decode.repetition import MIN_SPAN, repeating_unit

        last = len(body_ids) - (1 if ended else 0)
        for k in range(MIN_SPAN, last + 1):
            if repeating_unit(body_ids[:k]) is not None:
                self.out.extend(body_ids[:k])
                self.ops.append(Gen(unescape(_decode(self.tok, body_ids[:k]))))
                self.r.truncated = self.r.repeating = True
                return True
        return False


class _Closed(Exception):
    """EOS inside a gen closed the program (internal control flow)."""


def decode_program_remote(server, tokenizer, document: str, instruction: str, *, token_level: bool = False,
                          max_new_tokens: int = 512, profile: str = "teach",
                          cancel: threading.Event | None = None,
                          progress: Callable[[Progress], None] | None = None) -> RemoteDecode:
    """Decode an edit program on ``server`` (an ``engine.remote.client.Server``); see module doc."""
    prompt = render_prompt(document, instruction, tokenizer, token_level=token_level, profile=profile)
    check_context(len(prompt.ids), prompt.view.n_tokens, int(server.context_length))
    dec = _Decoder(server, tokenizer, prompt, token_level=token_level, max_new=max_new_tokens,
                   cancel=cancel, progress=progress)
    try:
        dec.run()
    except _Closed:
        dec.r.per_op.append({"kind": "close", "tokens": 0, "requests": 0, "ms": 0.0})
    dec.r.program = tuple(dec.ops)
    return dec.r
