"""Preview then apply without decoding twice: ``cad.previewEdit`` results kept for ``cad.applyPreview``.

Owns the cache of computed previews and the ``cad.applyPreview`` command:

* :func:`remember` (called by ``cad.previewEdit``) keeps the preview's snapshot, TextEdits and
  budget status under a fresh ``previewId`` and returns ``{previewId, newText}`` for the reply
  (``newText``: the document the edit produces, for a client's diff view). At most
  :data:`MAX_PREVIEWS` are kept per server (oldest dropped); each is applied at most once.
* ``cad.applyPreview [{previewId}]`` applies those edits through the same versioned apply as
  ``cad.applyEdit`` (:func:`cad_lsp.versioned_apply.apply_versioned`): applied as is when the
  document is unchanged, rebased when it changed only elsewhere, discarded on an overlap. No
  model call. Result: ``{applied, message, discarded, edits, program, stats, reusedPreview,
  warnings}``; the preview's warnings (a syntax breakage, say) are shown again once it is applied.
  A preview cut off by the token budget is refused unless ``applyTruncated`` (as for
  ``cad.applyEdit``); an unknown or already used ``previewId`` is an invalid-params error.
"""
from __future__ import annotations

import inspect
import itertools
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

from lsprotocol import types

from engine.program.grammar import serialize

from .errors import CommandArgumentError, CommandRefusedError
from .versioned_apply import apply_versioned, client_can_apply_edits

__all__ = ["APPLY_PREVIEW", "MAX_PREVIEWS", "Preview", "PreviewCache", "remember", "apply_preview"]

APPLY_PREVIEW = "cad.applyPreview"
MAX_PREVIEWS = 16
_counter = itertools.count(1)


@dataclass(frozen=True)
class Preview:
    snapshot: Any                    # cad_lsp snapshot of the decoded document
    edits: Sequence[types.TextEdit]
    instruction: str
    program: str
    truncated: bool
    budget: int | None
    stats: dict = field(default_factory=dict)
    refusal: str | None = None       # why it must not be applied (engine.program.placeholders)
    warnings: tuple = ()             # shown when it is applied (e.g. engine.program.breakage)
    created: float = field(default_factory=time.monotonic)


class PreviewCache:
    """The last :data:`MAX_PREVIEWS` previews by id; :meth:`take` removes what it returns."""

    def __init__(self, size: int = MAX_PREVIEWS):
        self._size = size
        self._items: OrderedDict[str, Preview] = OrderedDict()

    def add(self, preview: Preview) -> str:
        preview_id = f"preview-{next(_counter)}-{secrets.token_hex(4)}"
        self._items[preview_id] = preview
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return preview_id

    def take(self, preview_id: str) -> Preview | None:
        return self._items.pop(preview_id, None)

    def __len__(self) -> int:
        return len(self._items)


def cache_of(ls: Any) -> PreviewCache:
    cache = getattr(ls, "_cad_previews", None)
    if cache is None:
        cache = PreviewCache()
        ls._cad_previews = cache
    return cache


def remember(ls: Any, snap: Any, plan: Any, result: Any, request: Any, *, refusal: str | None = None,
             warnings: Sequence[str] = ()) -> dict:
    """Keep a finished preview; returns the reply fields ``previewId`` and ``newText``."""
    stats = result.stats
    preview = Preview(snapshot=snap, edits=list(plan.edits), instruction=request.instruction,
                      program=serialize(tuple(result.program)), truncated=bool(getattr(stats, "truncated", False)),
                      budget=getattr(stats, "budget", None),
                      stats={k: getattr(stats, k, None) for k in ("decoded_tokens", "copied_tokens", "ops", "wall_ms")},
                      refusal=refusal, warnings=tuple(warnings))
    return {"previewId": cache_of(ls).add(preview), "newText": plan.new_text}


def _preview_id(arguments: Sequence[Any]) -> str:
    first = arguments[0] if arguments else None
    value = first.get("previewId") if isinstance(first, dict) else None
    if not isinstance(value, str) or not value:
        raise CommandArgumentError(f"{APPLY_PREVIEW} expects [{{\"previewId\": \"...\"}}] (the previewId from "
                                   f"cad.previewEdit's result), got {arguments!r:.120}")
    return value


def _apply_kwargs(ls: Any) -> dict:
    """Keyword arguments the installed apply_versioned takes (timeout, request_id)."""
    params = inspect.signature(apply_versioned).parameters
    kwargs: dict[str, Any] = {}
    if "timeout" in params:
        kwargs["timeout"] = getattr(ls.settings, "apply_edit_timeout", 30.0)
    if "request_id" in params:
        kwargs["request_id"] = ls.protocol.msg_id
    return kwargs


async def apply_preview(ls: Any, *arguments: Any) -> dict:
    preview_id = _preview_id(arguments)
    if not client_can_apply_edits(ls):
        message = (f"{APPLY_PREVIEW} is refused: this client does not support workspace/applyEdit "
                   "(capabilities.workspace.applyEdit), so the server cannot change the document.")
        ls.show(message, types.MessageType.Error)
        raise CommandRefusedError(message)
    preview = cache_of(ls).take(preview_id)
    if preview is None:
        raise CommandArgumentError(f"{APPLY_PREVIEW}: no preview {preview_id!r} (already applied, or one of more "
                                   f"than {MAX_PREVIEWS} newer previews replaced it); run the preview again")
    reply = {"edits": len(preview.edits), "program": preview.program, "reusedPreview": True,
             "stats": {**preview.stats, "reused_preview": True, "preview_age_ms": (time.monotonic() - preview.created) * 1000.0}}
    if preview.truncated and not ls.settings.apply_truncated:
        message = (f"not applied: the previewed program was cut off by the token budget (maxNewTokens={preview.budget}), "
                   "so the rest of the document would be lost. Raise cad.maxNewTokens, select a smaller range, "
                   "or set cad.applyTruncated=true.")
        ls.show(f"Copy-as-Decode: {message}", types.MessageType.Warning)
        reply.update(applied=False, message=message, discarded=False, truncated=True)
        return reply
    if preview.refusal is not None:  # a lazy placeholder would delete code (engine.program.placeholders)
        ls.show(f"Copy-as-Decode: {preview.refusal}", types.MessageType.Warning)
        reply.update(applied=False, message=preview.refusal, discarded=False)
        return reply
    outcome = await apply_versioned(ls, preview.snapshot, preview.edits, f"cad: {preview.instruction}",
                                    **_apply_kwargs(ls))
    if preview.warnings and outcome.applied:   # what the preview said (e.g. a syntax breakage), said again
        ls.show("Copy-as-Decode: " + "; ".join(preview.warnings), types.MessageType.Warning)
    if outcome.discarded or getattr(outcome, "unconfirmed", False):
        ls.show(f"Copy-as-Decode: {outcome.message}", types.MessageType.Warning)
    ls.log(f"{APPLY_PREVIEW} {preview.snapshot.uri}: {outcome.message} (no decode: preview reused)")
    reply.update(applied=outcome.applied, message=outcome.message, discarded=outcome.discarded,
                 warnings=list(preview.warnings))
    return reply
