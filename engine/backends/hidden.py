"""Hidden states of one decoder layer, captured during ordinary forwards (for the copy-intent probe).

A linear probe (``engine.drafters.switchsd``; trained by ``training.probe``) reads the residual stream
of one layer of a Llama-style model (``model.model.layers``). Two sites per layer:

* ``"mid"``: after the attention sublayer (the residual ``x + attn(x)``, i.e. the input of
  ``post_attention_layernorm``): SwitchSD's paper finds copy intent most linearly separable here;
* ``"out"``: the layer's output (after the MLP sublayer).

``capture(model, layers, site)`` is a context manager that hooks those modules for the forwards the
CALLING THREAD runs inside it (another thread decoding on the same model is not recorded), and yields
``{layer: [tensor [batch, seq, hidden], ...]}`` (one entry per forward). ``HiddenRows`` keeps one layer's
rows aligned with a KV cache's positions (``engine.backends.kv.KVRunner.record_hidden``): written per
forward, cut by ``crop``, re-indexed when a multi-candidate verify keeps the winner's rows.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterable, Iterator

import torch

SITES = ("mid", "out")


def decoder_layers(model) -> list:
    """The decoder layers of a Llama-style causal LM (``model.model.layers``); ValueError otherwise."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        raise ValueError(f"{type(model).__name__} has no model.layers: hidden states cannot be captured")
    return list(layers)


@contextmanager
def capture(model, layers: Iterable[int], site: str = "mid") -> Iterator[dict[int, list[torch.Tensor]]]:
    """Record the hidden states at ``site`` of ``layers`` for this thread's forwards inside the block."""
    if site not in SITES:
        raise ValueError(f"unknown hidden-state site {site!r}; choose one of {', '.join(SITES)}")
    all_layers = decoder_layers(model)
    owner = threading.get_ident()
    out: dict[int, list[torch.Tensor]] = {}
    handles = []
    for index in layers:
        store = out.setdefault(index, [])
        if site == "mid":
            def pre(_module, args, _store=store):
                if threading.get_ident() == owner:
                    _store.append(args[0].detach())
            handles.append(all_layers[index].post_attention_layernorm.register_forward_pre_hook(pre))
        else:
            def post(_module, _args, output, _store=store):
                if threading.get_ident() == owner:
                    _store.append((output[0] if isinstance(output, tuple) else output).detach())
            handles.append(all_layers[index].register_forward_hook(post))
    try:
        yield out
    finally:
        for handle in handles:
            handle.remove()


class HiddenRows:
    """One layer's hidden rows, one per cached position (a growable buffer kept in step with the cache)."""

    def __init__(self, layer: int, site: str = "mid"):
        if site not in SITES:
            raise ValueError(f"unknown hidden-state site {site!r}; choose one of {', '.join(SITES)}")
        self.layer, self.site = layer, site
        self._buf: torch.Tensor | None = None
        self.length = 0

    def write(self, start: int, rows: torch.Tensor) -> None:
        """Rows ``rows`` ([n, hidden]) for cache positions ``start`` .. ``start + n - 1``; drops any later
        rows. Positions skipped over (a prompt prefix reused from a prefix cache) read as unknown."""
        rows = rows.float()
        need = start + rows.shape[0]
        if self._buf is None or need > self._buf.shape[0]:
            grown = torch.full((max(need, 2 * (0 if self._buf is None else self._buf.shape[0]), 64), rows.shape[1]),
                               float("nan"), dtype=torch.float32, device=rows.device)
            if self._buf is not None:
                grown[:self.length] = self._buf[:self.length]
            self._buf = grown
        if start > self.length:
            self._buf[self.length:start] = float("nan")
        self._buf[start:need] = rows
        self.length = need

    def crop(self, length: int) -> None:
        """Forget rows past ``length``."""
        self.length = min(self.length, max(0, length))

    def select(self, index: torch.Tensor) -> None:
        """Keep only the rows at ``index`` (in that order)."""
        if self._buf is None:
            return
        kept = self._buf[index.to(self._buf.device)]
        self._buf[:kept.shape[0]] = kept
        self.length = kept.shape[0]

    def row(self, position: int) -> torch.Tensor | None:
        """The hidden row of cache position ``position`` (negative: from the end), or None if not recorded."""
        if position < 0:
            position += self.length
        if self._buf is None or not 0 <= position < self.length or bool(torch.isnan(self._buf[position, 0])):
            return None
        return self._buf[position]
