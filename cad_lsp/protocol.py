"""The pygls protocol subclass: message life cycle, error hygiene and cancellation rules.

Owns what pygls' ``LanguageServerProtocol`` gets wrong for a hostile or buggy client:

* **life cycle** — a request before ``initialize`` gets ``-32002`` (ServerNotInitialized), not a
  traceback; after ``shutdown`` every request gets ``-32600`` and nothing is served any more
  (pygls cancelled in-flight requests while iterating the same dict the cancellations mutate,
  so ``shutdown`` during a decode answered ``RuntimeError``); ``exit`` ends the serving loop
  instead of calling ``sys.exit`` inside a handler (:mod:`cad_lsp.transport` ends the process);
* **no tracebacks to clients** — an unexpected exception is answered ``-32603`` with its type
  and message only; the traceback goes to the server log;
* **cancellation** — ``$/cancelRequest`` also sets the edit's cancel event (pygls only cancels
  the request future, which a running coroutine never sees); it is *ignored* once the edit's
  ``workspace/applyEdit`` is on its way to the client, because then the client decides, and
  answering -32800 would be a lie when the client applies the edit anyway;
* **server → client requests with a deadline** (:meth:`CadProtocol.request`): a client that
  never answers ``workspace/applyEdit`` or ``window/workDoneProgress/create`` cannot wedge an
  edit; a late answer is dropped;
* ``workspace/executeCommand``: the full ``ExecuteCommandParams`` are kept in a context variable
  so commands can honour the client's ``workDoneToken``.

Document sync (open/change/close bookkeeping) lives in :mod:`cad_lsp.document_sync`.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import uuid
from typing import Any, Callable

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

from .document_sync import DocumentSyncMixin
from .errors import CommandArgumentError, CommandRefusedError, EngineCommandError

__all__ = ["CadProtocol", "COMMAND_PARAMS", "ClientTimeoutError", "NOT_INITIALIZED", "INVALID_REQUEST"]

log = logging.getLogger(__name__)

NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600

COMMAND_PARAMS: contextvars.ContextVar[types.ExecuteCommandParams | None] = contextvars.ContextVar(
    "cad_command_params", default=None)


class ClientTimeoutError(TimeoutError):
    """The client did not answer a server → client request in time."""


class CadProtocol(DocumentSyncMixin, LanguageServerProtocol):
    def __init__(self, server: Any, converter: Any):
        super().__init__(server, converter)
        self.initialize_seen = False
        self.exit_requested = False
        self.exit_code: int | None = None
        self.on_exit_requested: Callable[[], None] | None = None
        self.applying: set[Any] = set()  # request ids whose workspace/applyEdit is pending

    # -- answers the transport needs ----------------------------------------------------------
    def send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        self._send_response(msg_id, error=types.ResponseError(code=code, message=message, data=data))

    def fail_pending_request(self, msg_id: Any, reason: str) -> None:
        """A response we cannot read: fail the request that waits for it (never leave it hanging)."""
        self._result_types.pop(msg_id, None)
        future = self._request_futures.pop(msg_id, None)
        if future is None or future.done():
            log.warning("unreadable response to unknown request %r: %s", msg_id, reason)
            return
        future.set_exception(JsonRpcException(message=reason, code=-32603))

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """Errors that answer the client (bad arguments, a refused command, an engine error that says
        what to do) are sent as they are and logged on one line; pygls logged each with a traceback
        and again as a server error, which filled the editor's log with noise for a typo."""
        error = None if future.cancelled() else future.exception()
        if isinstance(error, (CommandArgumentError, CommandRefusedError, EngineCommandError)):
            self._request_futures.pop(msg_id, None)
            log.warning("request %r answered with error %s: %s", msg_id, error.code, error.message)
            self._send_response(msg_id, error=error.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    # -- life cycle -----------------------------------------------------------------------------
    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        is_request = isinstance(message, RPCRequest)
        if method == types.INITIALIZE:
            self.initialize_seen = True
        elif not self.initialize_seen and method != types.EXIT:
            if is_request:
                self.send_error(message.id, NOT_INITIALIZED,
                                f"the server is not initialized: send 'initialize' before {method!r}")
            elif method is not None:
                log.warning("dropped %r received before initialize", method)
            return
        if self._shutdown and method != types.EXIT:
            if is_request:
                self.send_error(message.id, INVALID_REQUEST,
                                f"the server has received 'shutdown' and accepts only the 'exit' notification "
                                f"now; {method!r} was not run")
            else:
                log.info("dropped %r received after shutdown", method)
            return
        super().handle_message(message)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        """Stop serving first, then cancel the edits (iterating over a copy: cancelling a future
        runs its callbacks, which remove it from the dict)."""
        self._shutdown = True
        worker = getattr(self._server, "worker", None)
        if worker is not None:
            worker.cancel_all()
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        return None

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):
        """Record the exit code (0 after shutdown, else 1) and end the serving loop."""
        self.exit_requested = True
        self.exit_code = 0 if self._shutdown else 1
        worker = getattr(self._server, "worker", None)
        if worker is not None:
            worker.cancel_all()
        if self.on_exit_requested is not None:
            self.on_exit_requested()
            return None
        # Not our stdio transport (--tcp debugging runs pygls' loop): end the way pygls does.
        if worker is not None:
            worker.stop(timeout=3.0)
        sys.exit(self.exit_code)

    # -- error hygiene --------------------------------------------------------------------------
    def _send_response(self, msg_id: Any, result: Any = None, error: types.ResponseError | None = None):
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            log.error("internal error answering request %r: %s\n%s", msg_id, error.message,
                      "".join(error.data.get("traceback") or []))
            error = types.ResponseError(
                code=error.code, message=f"cad-lsp internal error: {error.message} (details are in the "
                                         "server's log; please report it)", data=None)
        super()._send_response(msg_id, result, error)

    # -- no leak per request ----------------------------------------------------------------------
    def _execute_handler(self, msg_id: Any, handler: Callable, callback: Any, args=None, kwargs=None):
        """pygls 2.1 runs each step of a generator handler (every ``workspace/executeCommand``)
        under a fresh uuid in ``_request_futures`` and never removes it: the finished task and
        its result (stats, program) stayed forever, ~3 KB per edit (RSS 54 → 553 MiB after 170k
        edits). Forget the step once it is done."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if getattr(callback, "func", None) != self._run_generator:
            return
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(
                lambda f, key=msg_id: self._request_futures.pop(key, None) if self._request_futures.get(key) is f else None)

    # -- cancellation ---------------------------------------------------------------------------
    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if not _is_id(msg_id):  # lsprotocol lets any JSON through here; a dict would raise in pygls
            log.warning("$/cancelRequest ignored: its id %.80r is not an integer or a string", msg_id)
            return
        if msg_id in self.applying:
            log.info("$/cancelRequest for %r ignored: its workspace/applyEdit was already sent; the "
                     "result will say whether the client applied it", msg_id)
            return
        super()._handle_cancel_notification(msg_id)
        cancel = getattr(self._server, "cancel_request", None)
        if cancel is not None:
            cancel(msg_id)

    @lsp_method(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def lsp_work_done_progress_cancel(self, params: types.WorkDoneProgressCancelParams):
        if not _is_id(params.token):
            log.warning("window/workDoneProgress/cancel ignored: its token %.80r is not an integer or a string",
                        params.token)
            return None
        return (yield from super().lsp_work_done_progress_cancel(params))

    # -- server → client requests with a deadline -----------------------------------------------
    async def request(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and await its answer for at most ``timeout`` seconds."""
        msg_id = f"cad-{uuid.uuid4().hex[:12]}"
        future = asyncio.wrap_future(self.send_request(method, params, msg_id=msg_id))
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            self._request_futures.pop(msg_id, None)
            self._result_types.pop(msg_id, None)
            raise ClientTimeoutError(f"the client did not answer {method} within {timeout:g} s") from None

    # -- workspace/executeCommand keeps its params ----------------------------------------------
    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams):
        COMMAND_PARAMS.set(params)
        return (yield from super().lsp_workspace__execute_command(params))


def _is_id(value: Any) -> bool:
    """A JSON-RPC id or progress token: an integer (not a boolean) or a string."""
    return isinstance(value, str) or isinstance(value, int) and not isinstance(value, bool)
