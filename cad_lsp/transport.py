"""The stdio transport: read frames, turn them into pygls messages, and end the process cleanly.

Owns what pygls' ``start_io`` did, with the failures a hostile client found fixed:

* framing errors are logged (stderr and ``window/logMessage``) and the stream resynchronises
  (:mod:`cad_lsp.framing`); a body that is not JSON gets the JSON-RPC ``-32700`` answer;
* a request whose params do not fit the LSP types (a string where an int belongs, a line number
  above 2**31-1) gets ``-32602`` naming the field, instead of no answer at all; a client
  *response* that does not fit (``"ok"`` for ``workspace/applyEdit``) fails the server's pending
  request with that reason instead of leaving it waiting forever;
* stdin is read by a dedicated daemon thread with ``os.read`` (no buffered-reader lock, no pygls
  thread pool), so neither end of input nor ``exit`` waits for a blocked read;
* at end of input or after ``exit`` every edit is cancelled and the engine thread gets
  :data:`STOP_GRACE_S` to leave its current forward; if it does not, the process ends with
  ``os._exit`` after flushing, because interpreter teardown under a running native forward
  aborts (the SIGABRT seen when stdin closed during a decode).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from typing import Any, BinaryIO

import cattrs
from pygls.exceptions import JsonRpcException
from lsprotocol.types import METHOD_TO_TYPES

from .framing import Frame, FrameReader

__all__ = ["serve_stdio", "STOP_GRACE_S"]

log = logging.getLogger(__name__)

STOP_GRACE_S = 3.0
_CHUNK = 65536
_IN_FLIGHT_CHUNKS = 64  # back-pressure: at most 4 MiB read ahead of the event loop


class _StdinPump:
    """A daemon thread that reads raw chunks and hands them to the loop through a queue."""

    def __init__(self, stream: BinaryIO, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._slots = threading.Semaphore(_IN_FLIGHT_CHUNKS)
        try:
            fd = stream.fileno()
            self._read = lambda: os.read(fd, _CHUNK)
        except (AttributeError, OSError, ValueError):  # e.g. BytesIO in tests
            read = getattr(stream, "read1", None) or stream.read
            self._read = lambda: read(_CHUNK)
        threading.Thread(target=self._run, name="cad-stdin", daemon=True).start()

    def _run(self) -> None:
        while True:
            self._slots.acquire()
            try:
                data = self._read()
            except OSError:
                data = b""
            try:
                self._loop.call_soon_threadsafe(self.queue.put_nowait, bytes(data))
            except RuntimeError:  # the loop is closed: the server is gone
                return
            if not data:
                return

    async def read(self, timeout: float | None) -> bytes | None:
        try:
            data = await asyncio.wait_for(self.queue.get(), timeout) if timeout else await self.queue.get()
        except asyncio.TimeoutError:
            return None
        self._slots.release()
        return data

    def wake(self) -> None:
        """Make a pending ``read`` return end of input (used by ``exit``)."""
        self.queue.put_nowait(b"")


def _describe(exc: BaseException | None) -> str:
    """A short, client-facing description of a cattrs structuring failure."""
    if exc is None:
        return "the message does not match the LSP types"
    try:
        lines = cattrs.transform_error(exc, path="params")
    except Exception:  # noqa: BLE001 - not a cattrs error
        lines = [f"{type(exc).__name__}: {exc}"]
    text = "; ".join(lines[:5])
    return text[:600]


async def _dispatch(protocol: Any, body: bytes) -> None:
    """Parse one body and hand it to the protocol; answer what cannot be handled."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        protocol.send_error(None, -32700, f"Parse error: the message body is not valid UTF-8 JSON ({exc})")
        return
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        msg_id = data.get("id") if isinstance(data, dict) else None
        protocol.send_error(msg_id if isinstance(msg_id, (str, int)) else None, -32600,
                            "Invalid Request: expected one JSON-RPC 2.0 object with \"jsonrpc\": \"2.0\" "
                            "(batches are not supported)")
        return
    if "params" not in data and isinstance(data.get("method"), str) and data["method"] not in METHOD_TO_TYPES:
        data = {**data, "params": None}  # params are optional in JSON-RPC: an unknown method is -32601, not -32602
    try:
        message = protocol.structure_message(data)
    except JsonRpcException as exc:
        _invalid(protocol, data, _describe(exc.__cause__))
        return
    protocol.handle_message(message)


def _invalid(protocol: Any, data: dict, reason: str) -> None:
    method, msg_id = data.get("method"), data.get("id")
    if not isinstance(msg_id, (str, int)) or isinstance(msg_id, bool):
        msg_id = None
    if method is not None and "id" in data:
        protocol.send_error(msg_id, -32602, f"Invalid params for {method!r}: {reason}. "
                                            "Fix the request to match the LSP specification and send it again.")
    elif method is not None:
        protocol.on_invalid_notification(data, reason)
    else:
        protocol.fail_pending_request(msg_id, f"the client's response does not match the LSP result type: {reason}")


async def _serve(server: Any, stream: BinaryIO) -> None:
    loop = asyncio.get_running_loop()
    pump = _StdinPump(stream, loop)
    protocol = server.protocol
    protocol.on_exit_requested = pump.wake
    reader = FrameReader(pump.read)
    while not protocol.exit_requested:
        frame: Frame | None = await reader.next()
        if frame is None:
            log.info("end of input: the client closed stdin")
            break
        if frame.error is not None:
            server.log_framing_error(frame.error)
            if frame.request_id is not None:
                protocol.send_error(frame.request_id, -32600, "Invalid Request: " + frame.error)
        if frame.body is None:
            continue
        try:
            await _dispatch(protocol, frame.body)
        except BrokenPipeError:
            log.error("the client closed its end of the connection; stopping")
            break
        except Exception:  # noqa: BLE001 - one bad message must not stop the server
            log.exception("failed to handle a message")
        await asyncio.sleep(0)
    await _cancel_pending(protocol)


class _NullWriter:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


async def _cancel_pending(protocol: Any) -> None:
    """End every in-flight request quietly before the loop closes: outer request futures first
    (pygls' generator callbacks then see them cancelled and stop), then the handler tasks.
    Nothing is written any more (the client has gone or asked us to exit); without this,
    asyncio.run's teardown cancelled the command coroutines under pygls' callbacks, which
    logged a CancelledError traceback for every edit in flight."""
    protocol.set_writer(_NullWriter())
    pending = list(protocol._request_futures.values())
    for future in pending:
        if not isinstance(future, asyncio.Future):
            future.cancel()
    tasks = [f for f in pending if isinstance(f, asyncio.Future) and not f.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=1.0)
    await asyncio.sleep(0)


def serve_stdio(server: Any, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Serve LSP on stdio until end of input or ``exit``; then stop the engine and end."""
    from pygls.io_ import StdoutWriter

    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(_serve(server, stdin or sys.stdin.buffer))
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        code = server.protocol.exit_code
        stopped = server.worker.stop(timeout=STOP_GRACE_S)
        if not stopped:
            log.warning("the engine did not stop within %.0f s; ending the process now", STOP_GRACE_S)
            _hard_exit(code if code is not None else 0)
    if code is not None:
        sys.exit(code)


def _hard_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    logging.shutdown()
    os._exit(code)

