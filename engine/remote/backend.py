"""``RemoteBackend``: what ``engine.api.EditEngine`` holds for a URL model spec instead of a LoadedModel.

``connect(spec)`` parses the spec (``engine.remote.spec``), finds the served model and its
context length (``engine.remote.client.Server.connect``), loads the local tokenizer, checks that
the server's tokenizer agrees and that it enforces grammars (``GrammarUnsupportedError`` otherwise),
and returns the backend. ``edit_runner`` is the remote ``run_edit`` (``engine.remote.edit``), which
``EditEngine`` calls instead of ``engine.edit.run_edit``. It has no KV ``session``: a serving engine
gives no logits, so decoding is prompt-level (one request per op), not a ``Session`` of forwards.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from engine.remote.client import Server
from engine.remote.edit import run_remote_edit
from engine.remote.spec import parse_remote_spec


_CONNECT_LOCK = threading.Lock()   # first imports of transformers and the tokenizer cache are not thread-safe


@dataclass
class RemoteBackend:
    spec: str
    server: Server
    tokenizer: object
    prompt_profile: str
    observers: list = field(default_factory=list)
    device: str = "remote"
    dtype: str = "server"
    edit_runner = staticmethod(run_remote_edit)

    @property
    def context_length(self) -> int:
        return self.server.context_length

    @property
    def warm_capacity(self) -> int:
        """Most prompt ids ``warm_prefix`` can hand the server: its context."""
        return self.server.context_length

    def warm_prefix(self, ids, *, cancel=None, chunk: int = 256):
        """One one-token completion of ``ids``: the serving engine keeps their KV in its own prefix cache
        (llama.cpp ``cache_prompt``, vLLM automatic prefix caching), so the edit's first request of this
        document finds them (``engine.backends.base``: optional capability; ``chunk`` is not used)."""
        from engine.backends.base import Prefilled
        from engine.errors import EditCancelled

        try:
            done = self.server.complete(ids, max_tokens=1, cancel=cancel)
        except EditCancelled:
            return Prefilled(reused=0, computed=0, cancelled=True)
        cached = min(len(ids), int(done.cached_tokens or 0))
        return Prefilled(reused=cached, computed=len(ids) - cached)

    def session(self, *, cancel=None):
        raise NotImplementedError("a remote backend has no KV session: it decodes one request per op "
                                  "(engine.remote.cad)")


def connect(spec: str, device: str = "auto", *, progress: Callable[[str], None] | None = None,
            check: bool = True) -> RemoteBackend:
    """Connect to the server a URL spec names (``device`` is ignored: the server decides)."""
    from engine.backends.model import load_tokenizer

    parsed = parse_remote_spec(spec)
    server = Server.connect(parsed)
    with _CONNECT_LOCK:
        tokenizer = load_tokenizer(parsed.tokenizer)
    if check:
        server.check_tokenizer(tokenizer)
        server.check_grammar(tokenizer)
    if progress is not None:
        progress(f"remote model {server.model!r} on {parsed.base_url} ({server.dialect}, "
                 f"context {server.context_length})")
    return RemoteBackend(spec=spec, server=server, tokenizer=tokenizer,
                         prompt_profile=parsed.profile_for(server.model))
