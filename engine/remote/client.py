"""The serving engine as the remote backend sees it: one model, its dialect, greedy completions.

``Server.connect(spec)`` asks ``/v1/models`` which model to use (the spec's name, else the only one
served; a wrong or missing name is a ``RemoteModelError`` that lists what is served), recognises
the engine (``owned_by``: ``llamacpp`` -> dialect ``llama.cpp``, ``vllm`` -> ``vllm``, anything else
``openai``) and reads its context length (llama.cpp ``/props``, vLLM ``max_model_len``).

``Server.complete(prompt_ids, max_tokens=, grammar=, stop=)`` is ONE greedy completion (temperature
0) whose prompt is token ids, optionally constrained by a GBNF grammar, and returns a
``Completion`` (text, the generated token ids when the engine returns them, why it stopped).
Dialects differ only in field names:

* vLLM / OpenAI: ``POST /v1/completions`` with ``structured_outputs: {"grammar": ...}`` (vLLM
  silently ignores the old ``guided_*`` fields) and ``return_token_ids``; EOS vs stop string from
  ``stop_reason``;
* llama.cpp: ``POST /completion`` (the same request on the native route, which also returns the
  token ids and ``stop_type``), ``grammar``, ``cache_prompt: true``, ``return_tokens: true``.

``check_grammar()`` proves once per connection that the engine enforces the grammar (a request whose
unconstrained answer would not be ``zq<digit>`` must come back as one); ``check_tokenizer()`` that
the server's tokenizer gives the local tokenizer's ids.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from engine.errors import ContextOverflowError
from engine.remote.errors import (
    GrammarUnsupportedError, RemoteError, RemoteHTTPError, RemoteModelError, RemoteProtocolError,
)
from engine.remote.http import call_json
from engine.remote.spec import RemoteSpec

PROBE_GRAMMAR = 'root ::= "zq" [0-9]\n'
_OVERFLOW = re.compile(r"context|too long|exceed|maximum.*length|n_ctx", re.I)


@dataclass
class Completion:
    """One completion: ``finish`` is ``"stop"`` (EOS, stop string, grammar complete) or ``"length"``."""

    text: str
    token_ids: list[int] | None
    finish: str
    stop_string: str | None       # the stop string that ended it, None for EOS / grammar end / length
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None


class Server:
    """One served model on an OpenAI-compatible engine (see module doc)."""

    def __init__(self, spec: RemoteSpec, model: str, dialect: str, context_length: int):
        self.spec, self.model, self.dialect, self.context_length = spec, model, dialect, context_length
        self.requests = 0
        self._lock = threading.Lock()

    # ---- connecting -------------------------------------------------------------------------------
    @classmethod
    def connect(cls, spec: RemoteSpec) -> "Server":
        listing = call_json(f"{spec.base_url}/models", timeout=min(spec.timeout, 30.0), retries=spec.retries)
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list) or not data:
            raise RemoteProtocolError(f"{spec.base_url}/models lists no models ({str(listing)[:200]}); is "
                                      f"{spec.base_url} an OpenAI-compatible /v1 endpoint?")
        names = [str(m.get("id")) for m in data if isinstance(m, dict)]
        if spec.model is None:
            if len(names) != 1:
                raise RemoteModelError(f"{spec.base_url} serves {len(names)} models ({', '.join(names)}); name "
                                       f"one in the spec: {spec.base_url}#<name>")
            chosen = data[0]
        else:
            chosen = next((m for m in data if m.get("id") == spec.model), None)
            if chosen is None:
                raise RemoteModelError(f"{spec.base_url} does not serve the model {spec.model!r}; it serves: "
                                       f"{', '.join(names)}. Fix the name after '#' in the model spec")
        owner = str(chosen.get("owned_by", "")).lower()
        dialect = "llama.cpp" if "llama" in owner else "vllm" if "vllm" in owner else "openai"
        server = cls(spec, str(chosen["id"]), dialect, 0)
        server.context_length = server._context_length(chosen)
        return server

    def _context_length(self, entry: dict) -> int:
        for key in ("max_model_len", "context_length", "n_ctx"):
            if isinstance(entry.get(key), int) and entry[key] > 0:
                return entry[key]
        if self.dialect == "llama.cpp":
            props = call_json(f"{self.spec.root_url}/props", timeout=min(self.spec.timeout, 30.0),
                              retries=self.spec.retries)
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                return n_ctx
        meta = entry.get("meta") or {}
        if isinstance(meta.get("n_ctx_train"), int):
            return meta["n_ctx_train"]
        raise RemoteProtocolError(f"{self.spec.base_url}: cannot tell the model's context length from "
                                  f"/v1/models (no max_model_len)")

    # ---- one completion ---------------------------------------------------------------------------
    def _body(self, prompt_ids, max_tokens, grammar, stop, stop_ids=None) -> tuple[str, dict]:
        body = {"model": self.model, "prompt": list(prompt_ids), "temperature": 0.0, "top_p": 1.0, "seed": 0,
                "stream": False}
        if self.dialect == "llama.cpp":
            body.update(n_predict=max_tokens, cache_prompt=True, return_tokens=True, top_k=1)
            if grammar is not None:
                body["grammar"] = grammar
            if stop:
                body["stop"] = list(stop)
            return f"{self.spec.root_url}/completion", body
        body.update(max_tokens=max_tokens, return_token_ids=True, skip_special_tokens=False)
        if stop_ids:   # the in-process stop tokens (every special id); llama.cpp stops at its EOG ids
            body["stop_token_ids"] = sorted(int(t) for t in stop_ids)
        if grammar is not None:
            body["structured_outputs"] = {"grammar": grammar}
        if stop:
            body["stop"] = list(stop)
        return f"{self.spec.base_url}/completions", body

    def complete(self, prompt_ids, *, max_tokens: int, grammar: str | None = None, stop=None, stop_ids=None,
                 cancel: threading.Event | None = None) -> Completion:
        """One greedy completion (see module doc); raises RemoteError subclasses, EditCancelled."""
        url, body = self._body(prompt_ids, max(1, int(max_tokens)), grammar, stop, stop_ids)
        with self._lock:
            self.requests += 1
        try:
            answer = call_json(url, body, timeout=self.spec.timeout, retries=self.spec.retries, cancel=cancel)
        except RemoteHTTPError as exc:
            raise self._explain(exc, len(body["prompt"]), grammar) from exc
        try:
            return self._parse(answer)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise RemoteProtocolError(f"{url}: unexpected completion answer {str(answer)[:300]}") from exc

    def _explain(self, exc: RemoteHTTPError, prompt_tokens: int, grammar) -> Exception:
        msg = exc.detail
        if exc.status == 404 and "model" in msg.lower():
            return RemoteModelError(f"{exc.url}: the server does not know the model {self.model!r}: {msg}")
        if exc.status in (400, 413) and _OVERFLOW.search(msg) and "grammar" not in msg.lower():
            return ContextOverflowError(prompt_tokens, self.context_length, 0, what=f"prompt ({msg})")
        if grammar is not None and exc.status in (400, 422) and re.search(r"grammar|structured|guided", msg, re.I):
            return GrammarUnsupportedError(f"{exc.url} rejected the grammar constraint: {msg}")
        return exc

    def _parse(self, a: dict) -> Completion:
        if self.dialect == "llama.cpp":
            stop_type = a.get("stop_type", "")
            finish = "length" if stop_type in ("limit", "none", "") and not a.get("stopping_word") else "stop"
            word = a.get("stopping_word") or None
            if stop_type == "eos":
                word = None
            timings = a.get("timings") or {}
            return Completion(text=a["content"], token_ids=[int(t) for t in a.get("tokens") or []] or None,
                              finish=finish, stop_string=word, prompt_tokens=int(a.get("tokens_evaluated", 0)),
                              completion_tokens=int(a.get("tokens_predicted", 0)),
                              # timings.cache_n: prompt tokens reused from the slot's cache (tokens_cached
                              # is the slot's whole cache after the request, prompt + prediction)
                              cached_tokens=timings.get("cache_n", a.get("tokens_cached")))
        choice = a["choices"][0]
        usage = a.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        ids = choice.get("token_ids")
        reason = choice.get("stop_reason")
        return Completion(text=choice["text"], token_ids=[int(t) for t in ids] if ids is not None else None,
                          finish="length" if choice.get("finish_reason") == "length" else "stop",
                          stop_string=reason if isinstance(reason, str) else None,
                          prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", 0)),
                          cached_tokens=details.get("cached_tokens"))

    # ---- checks done once per connection ---------------------------------------------------------
    def check_grammar(self, tokenizer) -> None:
        """Raise GrammarUnsupportedError unless a constrained request obeys the grammar."""
        ids = list(tokenizer.encode("Reply with one word: hello", add_special_tokens=False))
        try:
            c = self.complete(ids, max_tokens=4, grammar=PROBE_GRAMMAR)
        except RemoteHTTPError as exc:
            raise GrammarUnsupportedError(
                f"{self.spec.base_url} ({self.dialect}) rejected a grammar-constrained request: {exc.detail}. "
                f"Copy-as-Decode needs structured outputs (llama.cpp `grammar`, vLLM `structured_outputs`)") from exc
        if not re.fullmatch(r"zq[0-9]", c.text):
            raise GrammarUnsupportedError(
                f"{self.spec.base_url} ({self.dialect}) ignored the grammar constraint (asked for zq<digit>, got "
                f"{c.text!r}); Copy-as-Decode needs an engine that enforces GBNF grammars (llama.cpp `grammar`, "
                f"vLLM `structured_outputs.grammar`)")

    def check_tokenizer(self, tokenizer) -> None:
        """Raise RemoteError when the server's /tokenize disagrees with the local tokenizer."""
        text = '<program><copy lines="12-40"/><gen>\n    return a + b\n</gen></program>'
        want = list(tokenizer.encode(text, add_special_tokens=False))
        body = {"content": text, "add_special": False} if self.dialect == "llama.cpp" else \
            {"model": self.model, "prompt": text, "add_special_tokens": False}
        try:
            got = call_json(f"{self.spec.root_url}/tokenize", body, timeout=min(self.spec.timeout, 30.0),
                            retries=self.spec.retries)
        except RemoteError:
            return  # no /tokenize on this engine: nothing to compare
        tokens = got.get("tokens") if isinstance(got, dict) else None
        if tokens is not None and [t if isinstance(t, int) else t.get("id") for t in tokens] != want:
            raise RemoteError(f"the server's tokenizer disagrees with the local tokenizer "
                              f"{self.spec.tokenizer!r} ({tokens[:12]}... vs {want[:12]}...); pass the served "
                              f"model's tokenizer in the spec: #tokenizer=<HF dir>")
