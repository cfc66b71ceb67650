"""Server settings: defaults < command line < ``initializationOptions`` < ``workspace/configuration``.

Owns the ``cad`` settings section and its validation. Keys (camelCase, as clients send them):

* ``model``: model spec for :class:`engine.api.EditEngine` ("default", a GGUF path, an HF dir)
* ``device``: "auto" | "cpu" | "cuda" | ...
* ``draftModel``: model spec of a smaller model of the same tokenizer, or "" (none, the default): loaded
  beside ``model``, it drafts for genDrafter "draft-model" and for "switchsd" below its copy gate
  (:mod:`engine.drafters.draft_model`; lossless, it changes forwards, never text)
* ``strategy``: one of :data:`engine.api.STRATEGIES`
* ``genDrafter``: one of :data:`engine.api.DRAFTERS` (the drafter registry), default
  :data:`engine.api.DEFAULT_GEN_DRAFTER` ("replaced-lines"): the speculative drafter of the
  ``cad``/``cad-tokens`` gen bodies (lossless: it changes forwards, never text)
* ``snippetMerge``: bool, default true. An instruction that carries a pasted change pinning down the
  new text (a unified diff, SEARCH/REPLACE blocks, a snippet with ``... existing code ...``
  placeholders anchoring at one place) is applied without the model (:mod:`engine.program.pasted`);
  false: the strategy always decodes
* ``warmOnIdle``: bool, default true. A document left unchanged for a second after it was opened or
  changed has the instruction-free part of its prompt prefilled (:mod:`cad_lsp.warmup`), so its next
  edit starts warm; it runs only when no edit is waiting and the model is loaded
* ``maxNewTokens``: positive int, decode budget per edit
* ``resolverMode``: "strict" | "clipped"
* ``applyTruncated``: bool, default false. A program cut off by ``maxNewTokens`` is incomplete
  (everything after the cut would be lost), so ``cad.applyEdit`` refuses it unless this is true;
  ``cad.previewEdit`` always shows it, with a warning.
* ``minConfidence``: number in [0, 1], default 0 (off). A changed model edit whose confidence
  (``stats.confidence``, the least probability the model gave a token it chose) is below it is not
  applied by ``cad.applyEdit``: the reply carries the diff and a ``previewId`` for review, and
  ``cad.applyPreview`` applies it unchanged (the editor clients open it as a preview)
* ``applyEditTimeout``: seconds (> 0, default 30) to wait for the client's answer to
  ``workspace/applyEdit``; without an answer the command reports that the edit is unconfirmed
  instead of waiting forever. ``window/workDoneProgress/create`` waits at most
  ``min(5, applyEditTimeout)`` s, then the edit runs without progress.

``initializationOptions`` may hold the keys directly or under ``{"cad": {...}}``.
Unknown keys are ignored (listed in :attr:`Settings.merge` warnings), wrong values raise
:class:`SettingsError` naming the key, the value and what is allowed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from engine.api import DEFAULT_GEN_DRAFTER, DRAFTERS, MODES, STRATEGIES  # the registries' names; importing engine.api is torch-free

__all__ = ["Settings", "SettingsError", "SECTION", "STRATEGIES", "DRAFTERS", "DEFAULT_GEN_DRAFTER", "RESOLVER_MODES"]

SECTION = "cad"
RESOLVER_MODES = MODES  # the engine's resolver modes (one definition: engine.program.resolver)

_KEYS = {"model": "model", "device": "device", "strategy": "strategy",
         "draftModel": "draft_model", "draft_model": "draft_model",
         "genDrafter": "gen_drafter", "gen_drafter": "gen_drafter",
         "maxNewTokens": "max_new_tokens", "max_new_tokens": "max_new_tokens",
         "resolverMode": "resolver_mode", "resolver_mode": "resolver_mode",
         "snippetMerge": "snippet_merge", "snippet_merge": "snippet_merge",
         "warmOnIdle": "warm_on_idle", "warm_on_idle": "warm_on_idle",
         "applyTruncated": "apply_truncated", "apply_truncated": "apply_truncated",
         "applyEditTimeout": "apply_edit_timeout", "apply_edit_timeout": "apply_edit_timeout",
         "minConfidence": "min_confidence", "min_confidence": "min_confidence"}


class SettingsError(ValueError):
    """A ``cad.*`` setting has a value the server cannot use."""


@dataclass(frozen=True)
class Settings:
    model: str = "default"
    device: str = "auto"
    draft_model: str | None = None        # None: no draft model
    strategy: str = "cad"
    gen_drafter: str = DEFAULT_GEN_DRAFTER
    snippet_merge: bool = True
    warm_on_idle: bool = True
    max_new_tokens: int | None = None      # None: auto (the document's tokens + a margin)
    resolver_mode: str = "clipped"
    apply_truncated: bool = False
    apply_edit_timeout: float = 30.0
    min_confidence: float = 0.0           # 0: off; else changed model edits less sure than this go to review

    def merge(self, options: Mapping[str, Any] | None, *, source: str) -> tuple["Settings", list[str]]:
        """A copy with ``options`` applied; returns it and warnings about ignored keys."""
        if not options:
            return self, []
        if not isinstance(options, Mapping):
            raise SettingsError(f"{source}: expected an object of cad settings, got {type(options).__name__}")
        if isinstance(options.get(SECTION), Mapping):
            options = options[SECTION]
        changes: dict[str, Any] = {}
        warnings = []
        for key, value in options.items():
            if value is None:
                continue
            field = _KEYS.get(key)
            if field is None:
                warnings.append(f"{source}: unknown setting {SECTION}.{key} ignored "
                                f"(known: model, device, draftModel, strategy, genDrafter, snippetMerge, warmOnIdle, maxNewTokens, resolverMode, "
                                f"applyTruncated, applyEditTimeout, minConfidence)")
                continue
            changes[field] = _validate(field, value, key, source)
        return replace(self, **changes), warnings


def _validate(field: str, value: Any, key: str, source: str) -> Any:
    where = f"{source}: {SECTION}.{key}={value!r}"
    if field == "max_new_tokens":
        if value == "auto":
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SettingsError(f"{where} must be a positive integer or \"auto\" (decode budget per edit)")
        return value
    if field == "min_confidence":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise SettingsError(f"{where} must be a number between 0 and 1 (0: apply every complete edit)")
        return float(value)
    if field == "apply_edit_timeout":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
            raise SettingsError(f"{where} must be a number of seconds between 0 and 86400")
        return float(value)
    if field == "draft_model":
        if not isinstance(value, str):
            raise SettingsError(f"{where} must be a model spec (a string; \"\" for none)")
        return value.strip() or None
    if field in ("apply_truncated", "snippet_merge", "warm_on_idle"):
        if not isinstance(value, bool):
            raise SettingsError(f"{where} must be true or false")
        return value
    if not isinstance(value, str) or not value:
        raise SettingsError(f"{where} must be a non-empty string")
    if field == "strategy" and value not in STRATEGIES:
        raise SettingsError(f"{where} is not a strategy; use one of {', '.join(STRATEGIES)}")
    if field == "gen_drafter" and value not in DRAFTERS:
        raise SettingsError(f"{where} is not a drafter; use one of {', '.join(DRAFTERS)}")
    if field == "resolver_mode" and value not in RESOLVER_MODES:
        raise SettingsError(f"{where} must be 'strict' or 'clipped'")
    return value
