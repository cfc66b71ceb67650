"""Strategy ``auto``: per request, run the strategy this model on this machine should finish first.

Copy-as-Decode pays a longer prompt (numbered lines) and a parallel prefill of every copied line,
then a handful of forwards; spec-edit regenerates the whole document, verifying ``W`` drafted
tokens per forward. Which one is faster depends on the document's shape (its tokens in the edited
range), on what the prefix cache already holds (a document warmed for one strategy), and on the
machine: on a CPU a forward costs about its token count, so the two are close on long documents;
on a GPU a forward costs about the same for 1 or 64 tokens, so CaD's few forwards win by far on long
documents while spec-edit's two or three forwards win on a 20-line function.

The cost model, in milliseconds, with ``t(n, ctx)`` one forward of ``n`` new tokens after ``ctx``
cached ones (``ForwardCost``: a fixed cost, a cost per token and per attended position; fitted by
``calibrate`` to timed forwards of 1 to 512 tokens on an empty cache and of 16, 128 and 512 tokens
after 512, once per model and machine: the fit is kept in the user cache directory):

* ``cad``:       t(P_c - R_c, R_c) + t(D, P_c) + CAD_FORWARDS x t(CAD_FORWARD_TOKENS, P_c + D)
  (the prompt, the copied lines spliced, a few decision forwards);
* ``spec-edit``: t(P_r - R_r, R_r) + F x t((D + F) / F, P_r + D / 2), F = ceil(D / W) + SPEC_EXTRA_FORWARDS
  (the prompt, then the document verified in F forwards of at most W + 1 tokens).

``P`` is the strategy's prompt tokens, ``R`` what the prefix cache already holds of it, ``D`` the
edited text's tokens, ``W`` the spec-edit window. The forward counts are read off forced runs of
one-region edits (HumanEvalPack-Fix; ``benchmarks/picker.py`` reports predicted / measured on every
case). A tie (within ``TIE``) goes to ``cad``.

Only strategies the weights can write are candidates: weights fine-tuned on this project's programs
(prompt profile ``short``, ``engine.backends.adapters``) never learnt to regenerate a document, so
for them ``auto`` is always ``cad`` (the shipped default model). A serving engine's costs are not
modelled (``engine.remote``): there ``auto`` runs ``cad``, which decodes the fewest tokens.
A warm-up for ``auto`` (``engine.warmup.auto_warm_strategy``) computes the prompt of the strategy
that would be fastest once its prompt is cached, so the edit that follows picks what was warmed.
"""
from __future__ import annotations

import math
import threading
import time
import weakref
from dataclasses import dataclass, field

__all__ = ["AUTO", "CANDIDATES", "ForwardCost", "Pick", "calibrate", "candidates_for", "choose",
           "measure_forward_cost", "pick", "predict"]

AUTO = "auto"
CANDIDATES = ("cad", "spec-edit")
CAD_FORWARDS = 4          # decision forwards of a one-region CaD edit (headers, gen body, gen end) ...
CAD_FORWARD_TOKENS = 16   # ... of about this many tokens each (a header with its guessed successor)
SPEC_EXTRA_FORWARDS = 3   # spec-edit forwards beyond ceil(D / W): drafts rejected around the edit
TIE = 0.05                # predictions within 5% of each other: cad
# forwards timed by calibrate: sequences of new-token counts, each on a fresh session (a chunk, small
# forwards after it, a chunk after a chunk); the first sequence only warms the allocator up (not a sample)
_CALIBRATION = ((256,), (1,), (16,), (128,), (512, 16, 128, 512), (1,), (16,), (128,))


@dataclass(frozen=True)
class ForwardCost:
    """Wall ms of one forward of ``n`` new tokens after ``ctx`` cached ones:
    ``fixed_ms + n * token_ms + n * (ctx + n / 2) / 1000 * attend_ms``."""

    fixed_ms: float
    token_ms: float
    attend_ms: float = 0.0   # per new token, per 1,000 positions it attends to

    def ms(self, n: int, ctx: int = 0) -> float:
        if n <= 0:
            return 0.0
        return self.fixed_ms + n * self.token_ms + n * (ctx + n / 2) / 1000.0 * self.attend_ms


@dataclass
class Pick:
    """What ``auto`` chose: the strategy, the predicted ms of each candidate, and why."""

    strategy: str
    predicted_ms: dict = field(default_factory=dict)
    reason: str = ""

    def describe(self) -> str:
        costs = ", ".join(f"{name} {ms:.0f} ms" for name, ms in self.predicted_ms.items())
        return f"auto picked {self.strategy}" + (f" (predicted {costs})" if costs else "") + \
            (f": {self.reason}" if self.reason else "")


def _fit(samples: list[tuple[int, int, float]]) -> ForwardCost:
    """Least squares of ``ForwardCost`` over (n, ctx, ms) samples (absolute error: the long forwards,
    which dominate an edit's wall, weigh most); every coefficient clamped at >= 0."""
    import numpy as np

    rows = np.array([[1.0, n, n * (ctx + n / 2) / 1000.0] for n, ctx, _ in samples])
    ms = np.array([t for _, _, t in samples])
    fixed, token, attend = (max(float(c), 0.0) for c in np.linalg.lstsq(rows, ms, rcond=None)[0])
    return ForwardCost(fixed_ms=fixed, token_ms=token, attend_ms=attend)


_calibrations: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # model -> ForwardCost
_calibration_lock = threading.Lock()
CALIBRATION_FILE = "forward-costs.json"   # in engine.backends.model.cache_root(): one fit per model and machine
_KEPT_FITS = 32


def calibrate(loaded) -> ForwardCost:
    """``loaded``'s ForwardCost on this machine: measured once (about 3 s on 2 CPU cores), then kept in
    memory and in the user cache directory (keyed by model, device, dtype, threads and host)."""
    with _calibration_lock:
        if loaded.model not in _calibrations:
            key = _machine_key(loaded)
            cost = _load_fit(key)
            if cost is None:
                cost = measure_forward_cost(loaded)
                _store_fit(key, cost)
            _calibrations[loaded.model] = cost
        return _calibrations[loaded.model]


def _machine_key(loaded) -> str:
    import platform

    import torch

    return "|".join(map(str, (getattr(loaded, "spec", "?"), getattr(loaded, "device", "?"),
                              getattr(loaded, "dtype", "?"), torch.get_num_threads(), platform.node(),
                              platform.machine(), torch.__version__)))


def _fits_path():
    from engine.backends.model import cache_root

    return cache_root() / CALIBRATION_FILE


def _read_fits() -> dict:
    import json

    try:
        fits = json.loads(_fits_path().read_text())
    except (OSError, ValueError):
        return {}
    return fits if isinstance(fits, dict) else {}


def _load_fit(key: str) -> ForwardCost | None:
    entry = _read_fits().get(key)
    try:
        return ForwardCost(**{name: float(entry[name]) for name in ("fixed_ms", "token_ms", "attend_ms")})
    except (TypeError, KeyError, ValueError):
        return None


def _store_fit(key: str, cost: ForwardCost) -> None:
    """Keep the fit (atomically: a temporary file renamed over the old one); a cache that cannot be
    written only means measuring again next time."""
    import json
    import os
    from dataclasses import asdict

    fits = _read_fits()
    fits.pop(key, None)
    fits[key] = {**asdict(cost), "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    fits = dict(list(fits.items())[-_KEPT_FITS:])
    path = _fits_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(fits, indent=1))
        os.replace(tmp, path)
    except OSError:
        pass


def measure_forward_cost(loaded) -> ForwardCost:
    """Timed forwards (``_CALIBRATION``): each sequence on a fresh session, after a one-token forward
    that pays the session's set-up; the small ones twice, keeping the faster (less noise)."""
    from engine.backends.kv import KVRunner

    size = max(sum(seq) for seq in _CALIBRATION) + 1
    filler = loaded.tokenizer.encode(" x = 1\n" * size, add_special_tokens=False)[:size]
    best: dict[tuple[int, int], float] = {}
    KVRunner(loaded.model).feed(filler[:_CALIBRATION[0][0]])
    for seq in _CALIBRATION[1:]:
        runner = KVRunner(loaded.model)          # no prefix cache: these ids must not be kept
        runner.feed(filler[:1])
        for n in seq:
            ctx, start = runner.length, time.perf_counter()
            runner.feed(filler[ctx:ctx + n]).sum().item()   # .item(): the device's work is done (CUDA, MPS)
            ms = (time.perf_counter() - start) * 1000.0
            best[(n, ctx)] = min(ms, best.get((n, ctx), ms))
    return _fit([(n, ctx, ms) for (n, ctx), ms in best.items()])


def candidates_for(loaded) -> tuple[tuple[str, ...], str]:
    """The strategies ``auto`` may run on ``loaded``, and why others are left out ('' if none is)."""
    from engine.backends.adapters import writes_programs_only

    if writes_programs_only(loaded):
        return ("cad",), f"the weights (prompt profile {loaded.prompt_profile!r}) are trained to write edit programs only"
    if getattr(loaded, "model", None) is None:
        return ("cad",), "only in-process forwards are modelled; cad decodes the fewest tokens"
    return CANDIDATES, ""


def _cached(loaded, ids: list[int]) -> int:
    cache = getattr(loaded, "prefix_cache", None)
    return cache.peek(ids, limit=len(ids) - 1) if cache is not None else 0


def predict(loaded, document: str, instruction: str, *, window: int, cost: ForwardCost,
            assume_cached: dict[str, int] | None = None) -> dict[str, float]:
    """Predicted wall ms of ``cad`` and ``spec-edit`` for this edit of ``document`` (module doc);
    ``assume_cached``: prompt positions to count as cached per strategy instead of asking the prefix cache."""
    from engine.prompt import render_prompt, render_regen_prompt

    assumed = assume_cached or {}
    doc = len(loaded.tokenizer.encode(document, add_special_tokens=False))
    cad_ids = render_prompt(document, instruction, loaded.tokenizer,
                            profile=getattr(loaded, "prompt_profile", "teach")).ids
    regen_ids = render_regen_prompt(document, instruction, loaded.tokenizer).ids
    p_c, r_c = len(cad_ids), assumed.get("cad", _cached(loaded, cad_ids))
    p_r, r_r = len(regen_ids), assumed.get("spec-edit", _cached(loaded, regen_ids))
    cad = cost.ms(p_c - r_c, r_c) + cost.ms(doc, p_c) + CAD_FORWARDS * cost.ms(CAD_FORWARD_TOKENS, p_c + doc)
    spec_forwards = math.ceil((doc + 1) / max(1, window)) + SPEC_EXTRA_FORWARDS
    per_forward = math.ceil((doc + spec_forwards) / spec_forwards)   # the draft never runs past the document
    spec = cost.ms(p_r - r_r, r_r) + spec_forwards * cost.ms(per_forward, p_r + doc // 2)
    return {"cad": cad, "spec-edit": spec}


def choose(predicted: dict[str, float]) -> str:
    """The candidate with the least predicted ms; ``cad`` when it is within ``TIE`` of that."""
    best = min(predicted, key=predicted.get)
    return "cad" if "cad" in predicted and predicted["cad"] <= predicted[best] * (1 + TIE) else best


def pick(loaded, document: str, instruction: str, *, window: int) -> Pick:
    """Choose among ``candidates_for(loaded)`` by predicted wall time (a tie goes to ``cad``)."""
    allowed, why = candidates_for(loaded)
    if len(allowed) == 1:
        return Pick(allowed[0], reason=why)
    predicted = predict(loaded, document, instruction, window=window, cost=calibrate(loaded))
    predicted = {name: round(predicted[name], 1) for name in allowed}
    return Pick(choose(predicted), predicted, "fastest predicted")
