"""Shallow screening on the in-process HF backend (CopyLoop, Du & Chung, arXiv:2610.38822, §2).

A screened forward is ONE verify forward split at a screening depth ``d_s``: the ids (committed
pending ids + a draft) run through decoder layers ``0..d_s-1`` only, on top of the KV cache (whose
layers ``< d_s`` hold exactly the entries those layers need); the model's final norm + lm_head read
the partial hidden states out; the draft is cut at the first token the shallow readout's argmax
disagrees with; the surviving positions then CONTINUE at depth: their depth-``d_s`` hidden states
(not recomputed) run through layers ``d_s..L-1``, and the final norm + lm_head give full-depth
logits. The caller keeps the draft by the project's one acceptance rule
(``engine.decode.verify.accept_prefix``) on those full-depth logits, so screening only shortens
drafts, never changes the output. Afterwards every layer of the cache holds the same positions
(the screened-out tail is cropped from layers ``< d_s`` here; the caller's ``runner.crop`` drops the
rejected tail from all layers).

Positions, rotary embeddings and causal masks are built exactly as ``LlamaModel.forward`` builds
them (``position_ids = arange(n) + cached length``; ``create_causal_mask`` sized against the first
cache layer the pass writes to), so a screened forward is the same computation as a plain one over
the survivors. Works for decoder-only HF models laid out like Llama (``model.model.embed_tokens``,
``.layers``, ``.norm``, ``.rotary_emb``, ``model.lm_head``) with a ``DynamicCache``; ``supports``
says whether a session qualifies (other sessions verify unscreened).

    supports(runner, depth) -> bool
    screened_feed(runner, ids, *, keep, first, depth) -> logits   # rows for the survivors only
"""
from __future__ import annotations

import time

import torch

from engine.backends.kv import KVRunner
from engine.errors import EditCancelled


def _parts(model):
    inner = getattr(model, "model", None)
    names = ("embed_tokens", "layers", "norm", "rotary_emb")
    if inner is None or not all(hasattr(inner, n) for n in names) or not hasattr(model, "lm_head"):
        return None
    return inner


def supports(runner, depth: int) -> bool:
    """True when ``runner`` is an in-process KV session over a Llama-style model whose cache already
    holds every layer (after the prefill), that records no hidden rows, and ``0 < depth < layers``."""
    if not isinstance(runner, KVRunner) or runner.length == 0 or getattr(runner, "hidden", None) is not None:
        return False  # a runner recording hidden rows books them per plain forward
    inner = _parts(runner.model)
    if inner is None:
        return False
    layers = len(inner.layers)
    cache_layers = getattr(runner.cache, "layers", None)
    return 0 < depth < layers and cache_layers is not None and len(cache_layers) == layers and all(
        getattr(layer, "is_croppable", False) and layer.get_seq_length() == runner.length for layer in cache_layers)


def _run_layers(model, hidden, positions, rope, cache, lo: int, hi: int):
    """Layers ``lo..hi-1`` over ``hidden`` on top of ``cache`` (as in LlamaModel.forward)."""
    from transformers.masking_utils import create_causal_mask

    inner = model.model
    mask = create_causal_mask(config=model.config, inputs_embeds=hidden, attention_mask=None,
                              past_key_values=cache, position_ids=positions, layer_idx=lo)
    for layer in inner.layers[lo:hi]:
        hidden = layer(hidden, attention_mask=mask, position_embeddings=rope, position_ids=positions,
                       past_key_values=cache, use_cache=True)
    return hidden


def _readout(model, hidden):
    """Final norm + lm_head over ``hidden`` [1, n, H] -> float32 logits [n, V]."""
    return model.lm_head(model.model.norm(hidden))[0].float()


def crop_layers(cache, length: int, lo: int = 0, hi: int | None = None) -> None:
    """Crop cache layers ``lo..hi-1`` to ``length`` positions (the others are left as they are)."""
    for layer in cache.layers[lo:hi]:
        extra = layer.get_seq_length() - length
        if extra > 0:
            layer.crop(-extra)


@torch.inference_mode()
def screened_feed(runner: KVRunner, ids: list[int], *, keep: int, first: int, depth: int) -> torch.Tensor:
    """ONE screened verify forward over ``ids``, whose tail ``ids[first:]`` is a draft (``first >= 1``).

    Rows of the shallow readout at depth ``depth`` screen the draft: ``ids[first + i]`` survives while
    it equals the argmax of the shallow row before it. The survivors ``ids[:first + m]`` continue
    through the deep layers; returns the full-depth float32 logits of their last ``keep - cut``
    positions (``cut`` = screened-out draft tokens, so the caller reads ``m`` from the row count).
    The runner's cache and ids then hold the survivors in every layer; the forward is logged as one.
    """
    if not ids:
        raise ValueError("screened_feed() needs at least one token id")
    if not 1 <= first <= len(ids):
        raise ValueError(f"screened_feed(): the draft must follow at least one id (first={first}, {len(ids)} ids)")
    if runner.cancel is not None and runner.cancel.is_set():
        raise EditCancelled(f"edit cancelled after {runner.log.forwards} forwards")
    start = time.perf_counter()
    model, cache, base, n = runner.model, runner.cache, runner.length, len(ids)
    layers = len(model.model.layers)
    input_ids = torch.tensor([ids], dtype=torch.long, device=runner.device)
    hidden = model.model.embed_tokens(input_ids)
    positions = (torch.arange(n, device=runner.device) + base).unsqueeze(0)
    rope = model.model.rotary_emb(hidden, position_ids=positions)
    hidden = _run_layers(model, hidden, positions, rope, cache, 0, depth)

    shallow = _readout(model, hidden[:, first - 1:n - 1]).argmax(dim=-1).tolist()
    drafted = ids[first:]
    m = next((i for i, (s, t) in enumerate(zip(shallow, drafted)) if s != t), len(drafted))
    survivors = first + m
    crop_layers(cache, base + survivors, 0, depth)  # the screened-out tail leaves the shallow layers

    hidden = _run_layers(model, hidden[:, :survivors], positions[:, :survivors],
                         tuple(t[:, :survivors] for t in rope), cache, depth, layers)
    rows = max(1, min(keep, n) - (n - survivors))
    logits = _readout(model, hidden[:, survivors - rows:])

    fed = ids[:survivors]
    runner.ids.extend(fed)
    runner.log.forwards += 1
    runner.log.tokens_fed += n
    runner.log.sizes.append(n)
    if runner.observers and runner.device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    runner.log.seconds += elapsed
    for observe in runner.observers:
        observe(list(ids), elapsed * 1000.0)
    return logits
