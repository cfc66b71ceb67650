"""Warm documents while the user reads: the next edit starts from a prefilled prompt.

Owns the idle timers behind the ``warmOnIdle`` setting. When a document has been opened or
changed and then left alone for :data:`WARM_DELAY_S`, its text goes to the engine worker's
warm-up slot (:meth:`cad_lsp.worker.EngineWorker.warm`), which prefills the part of the prompt
that comes before the instruction (``EditEngine.warm``, ``engine.warmup``) with the configured
strategy. On a long document on CPU that prefill is most of a cold edit's time.

The worker keeps edits first (an edit cancels a running warm-up within one forward), keeps only
the newest warm-up waiting, and never loads the model for one: with the model not loaded yet
(no ``--preload`` and no edit so far) a warm-up is skipped. Timers run on the server's event
loop; a change restarts the document's timer and a close drops it. A warm-up that ran is logged
at the ``Log`` level (the client's server log, never a popup); a skipped one only in the server's
own debug log.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import unquote

from lsprotocol import types

from .worker import WarmJob

__all__ = ["WARM_DELAY_S", "schedule", "forget"]

WARM_DELAY_S = 1.0   # seconds a document must stay unchanged before it is prefilled

log = logging.getLogger(__name__)


def _timers(ls: Any) -> dict:
    timers = getattr(ls, "_warm_timers", None)
    if timers is None:
        timers = ls._warm_timers = {}
    return timers


def schedule(ls: Any, uri: str) -> None:
    """(Re)start ``uri``'s idle timer; called on the event loop after didOpen/didChange."""
    forget(ls, uri)
    settings = getattr(ls, "settings", None)
    if settings is None or not settings.warm_on_idle or not hasattr(ls, "worker"):
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop (a unit test driving the handler directly): nothing to schedule
        return
    _timers(ls)[unquote(uri)] = loop.call_later(WARM_DELAY_S, _fire, ls, uri)


def forget(ls: Any, uri: str) -> None:
    """Drop ``uri``'s pending timer (a newer change or a close)."""
    handle = _timers(ls).pop(unquote(uri), None)
    if handle is not None:
        handle.cancel()


def _fire(ls: Any, uri: str) -> None:
    _timers(ls).pop(unquote(uri), None)
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is None:
        return
    settings = ls.settings
    ls.worker.warm(WarmJob(document.source, settings.strategy, settings.model, settings.device, label=uri,
                           draft_model=settings.draft_model, on_done=lambda result: _report(ls, uri, result)))


def _report(ls: Any, uri: str, result: Any) -> None:
    """Called on the worker thread: one line in the server log (``Log`` level)."""
    if result is None:
        return
    message = f"{uri}: {result.describe()}"
    if result.status == "skipped":  # e.g. a remote engine, or the model not loaded: not worth a line per change
        log.debug(message)
        return
    log.info(message)
    loop = getattr(ls, "_loop", None)
    if loop is not None:
        params = types.LogMessageParams(type=types.MessageType.Log, message=message)
        try:
            loop.call_soon_threadsafe(ls.window_log_message, params)
        except RuntimeError:  # the loop is closed: the server is shutting down
            pass
