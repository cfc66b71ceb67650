"""Work-done progress for one edit: token choice, begin/report/end, cancel hook, throttling.

Owns the LSP progress protocol for a command:

* the client's ``workDoneToken`` (from ``ExecuteCommandParams``) is used when given;
  otherwise, if the client supports ``window.workDoneProgress``, a server token
  ``cad-<uuid>`` is created with ``window/workDoneProgress/create`` (answered within a
  timeout, else no progress); otherwise progress is silent (all methods are no-ops);
* ``begin`` is ``cancellable``; ``window/workDoneProgress/cancel`` for the token sets the
  edit's cancel event (pygls cancels the token's future; we watch it);
* reports from the worker thread go through ``loop.call_soon_threadsafe`` and are throttled
  (at most one per ``min_interval`` seconds unless the op count changed).
"""
from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

from lsprotocol import types

__all__ = ["EditProgress"]


class EditProgress:
    """Progress notifications for one edit, safe to call from the worker thread via ``*_threadsafe``."""

    def __init__(self, ls: Any, token: types.ProgressToken | None, cancel: threading.Event,
                 loop: asyncio.AbstractEventLoop, min_interval: float = 0.1):
        self._ls = ls
        self.token = token
        self._cancel = cancel
        self._loop = loop
        self._min_interval = min_interval
        self._last_report = 0.0
        self._last_ops = -1
        self._ended = False

    @classmethod
    async def start(cls, ls: Any, client_token: types.ProgressToken | None, cancel: threading.Event,
                    title: str, message: str, *, create_timeout: float = 5.0) -> "EditProgress":
        """Choose the token (client's, else a created one, else none) and send ``begin``.

        ``window/workDoneProgress/create`` is awaited at most ``create_timeout`` seconds: a
        client that never answers it used to hang the command before the decode even started."""
        token = client_token
        if token is None and _client_supports_progress(ls):
            token = f"cad-{uuid.uuid4().hex[:12]}"
            try:
                await ls.protocol.request(types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                                          types.WorkDoneProgressCreateParams(token=token), create_timeout)
            except Exception as exc:  # noqa: BLE001 - a client may refuse or not answer; edit without progress
                ls.log(f"no progress for this edit: window/workDoneProgress/create failed ({exc})",
                       types.MessageType.Warning)
                token = None
        progress = cls(ls, token, cancel, asyncio.get_running_loop())
        if token is not None:
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title=title, message=message, cancellable=True, percentage=None))
            future = ls.work_done_progress.tokens.get(token)
            if future is not None:
                future.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)
        return progress

    def report(self, message: str) -> None:
        """Send a report now (event-loop thread)."""
        if self.token is not None and not self._ended:
            self._ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(message=message))

    def report_threadsafe(self, message: str, ops: int | None = None, force: bool = False) -> None:
        """Throttled report from any thread."""
        if self.token is None:
            return
        now = time.monotonic()
        if not force and ops == self._last_ops and now - self._last_report < self._min_interval:
            return
        self._last_report, self._last_ops = now, (ops if ops is not None else self._last_ops)
        self._loop.call_soon_threadsafe(self.report, message)

    def end(self, message: str) -> None:
        """Send ``end`` once and forget the token's cancel future (event-loop thread)."""
        if self.token is None or self._ended:
            return
        self._ended = True
        self._ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self._ls.work_done_progress.tokens.pop(self.token, None)


def _client_supports_progress(ls: Any) -> bool:
    window = getattr(ls.client_capabilities, "window", None)
    return bool(window is not None and window.work_done_progress)
