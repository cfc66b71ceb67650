"""JSON over HTTP for the remote backend: timeouts, bounded retries with backoff, cancellation.

``call_json(url, body=None, ...)`` sends one request (GET without a body, POST with one) and
returns the decoded JSON answer. Connection errors (refused, reset, DNS) and HTTP 5xx are retried
``retries`` times with exponential backoff (``backoff * 2**k`` s, at most ``MAX_BACKOFF``); 4xx is
never retried (``RemoteHTTPError`` carries the server's message); a read that exceeds ``timeout``
raises ``RemoteTimeoutError``. ``cancel`` (a ``threading.Event``) aborts the in-flight request: a
watcher closes the socket, so the blocked read returns at once and ``EditCancelled`` is raised
(the server sees the connection drop and stops generating). Standard library only.
"""
from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from urllib.parse import urlsplit

from engine.errors import EditCancelled
from engine.remote.errors import RemoteConnectionError, RemoteHTTPError, RemoteProtocolError, RemoteTimeoutError

MAX_BACKOFF = 8.0
_POLL_S = 0.05


def _message(raw: bytes) -> str:
    """The error message of an error body (OpenAI, llama.cpp and vLLM shapes), else the raw text."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        return str(err.get("message") or err.get("detail") or err)[:1000]
    return str(err)[:1000]


class _Watch:
    """Closes a connection's socket once ``cancel`` is set (bounded: ends with the request)."""

    def __init__(self, conn: http.client.HTTPConnection, cancel: threading.Event | None):
        self.conn, self.cancel, self.fired = conn, cancel, False
        self._done = threading.Event()
        self._thread = None
        if cancel is not None:
            self._thread = threading.Thread(target=self._run, name="cad-remote-cancel", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(_POLL_S):
            if self.cancel.is_set():
                self.fired = True
                sock = self.conn.sock
                if sock is not None:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


def _once(url: str, body: dict | None, timeout: float, cancel: threading.Event | None) -> tuple[int, bytes]:
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=timeout)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    watch = _Watch(conn, cancel)
    try:
        if body is None:
            conn.request("GET", path or "/")
        else:
            data = json.dumps(body).encode()
            conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    except (OSError, http.client.HTTPException):
        if watch.fired or (cancel is not None and cancel.is_set()):
            raise EditCancelled("edit cancelled: the in-flight request to the server was aborted") from None
        raise
    finally:
        watch.stop()
        conn.close()


def call_json(url: str, body: dict | None = None, *, timeout: float = 300.0, retries: int = 3,
              backoff: float = 0.5, cancel: threading.Event | None = None):
    """One JSON request with retries (see module doc). Returns the parsed JSON answer."""
    last: Exception | None = None
    for attempt in range(retries + 1):
        if cancel is not None and cancel.is_set():
            raise EditCancelled("edit cancelled before the request was sent")
        if attempt:
            wait = min(MAX_BACKOFF, backoff * 2 ** (attempt - 1))
            if cancel is not None:
                if cancel.wait(wait):
                    raise EditCancelled("edit cancelled while waiting to retry the request")
            else:
                time.sleep(wait)
        try:
            status, raw = _once(url, body, timeout, cancel)
        except (socket.timeout, TimeoutError) as exc:
            raise RemoteTimeoutError(f"{url}: no answer within {timeout:g} s; raise the spec's timeout "
                                     f"(#timeout=SECONDS) or check the server's load") from exc
        except (OSError, http.client.HTTPException) as exc:
            last = exc
            continue
        if status >= 500:
            last = RemoteHTTPError(status, _message(raw), url)
            continue
        if status >= 400:
            raise RemoteHTTPError(status, _message(raw), url)
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError as exc:
            raise RemoteProtocolError(f"{url}: the answer is not JSON: {raw[:200]!r}") from exc
    if isinstance(last, RemoteHTTPError):
        raise last
    raise RemoteConnectionError(
        f"cannot reach {url} after {retries + 1} attempt(s): {type(last).__name__}: {last}. Is the server "
        f"running, and is the model URL right (e.g. http://127.0.0.1:8080/v1)?") from last
