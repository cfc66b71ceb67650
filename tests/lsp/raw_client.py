"""A raw JSON-RPC client for hostile-protocol tests: bytes on the server's real stdin/stdout.

No LSP library: the tests need to send what a well-behaved client never would (broken framing,
lone surrogates, huge integers, requests before initialize, no answer to server requests) and
to see exactly what comes back. A reader thread parses the server's frames strictly; server →
client requests are answered by per-method policies (``client.answers[method] = fn(message)``
returning the result, or :data:`NO_ANSWER` to stay silent).
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
NO_ANSWER = object()
FAKE_SERVER = [sys.executable, "-m", "tests.lsp.fake_engine_server"]
REAL_SERVER = [sys.executable, "-m", "cad_lsp"]

CAPS = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {"applyEdit": True, "configuration": False, "workspaceEdit": {"documentChanges": True}},
}


class RawClient:
    def __init__(self, argv: list[str] | None = None, env: dict | None = None):
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv or FAKE_SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, cwd=REPO,
                                     env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
        self.messages: list[dict] = []
        self.received_at: list[float] = []
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self.answers: dict[str, Callable[[dict], Any]] = {
            "workspace/applyEdit": lambda m: {"applied": True},
            "window/workDoneProgress/create": lambda m: None,
            "workspace/configuration": lambda m: [None] * len(m["params"]["items"]),
        }
        threading.Thread(target=self._read, daemon=True).start()

    # -- transport ----------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(out.read(length))
            with self._cond:
                self.messages.append(message)
                self.received_at.append(time.perf_counter())
                self._cond.notify_all()
            if "method" in message and "id" in message:
                answer = self.answers.get(message["method"], lambda m: None)(message)
                if answer is not NO_ANSWER:
                    try:
                        self.send({"id": message["id"], "result": answer})
                    except (BrokenPipeError, ValueError):
                        return

    # -- messages -----------------------------------------------------------------------------
    def request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        msg_id = next(self._ids) if msg_id is None else msg_id
        self.send({"id": msg_id, "method": method, **({} if params is None else {"params": params})})
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, **({} if params is None else {"params": params})})

    def wait(self, predicate: Callable[[dict], bool], timeout: float = 30.0, what: str = "message") -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.messages)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {what} within {timeout:g} s; stderr:\n{self.stderr()[-3000:]}")
                self._cond.wait(left)

    def response(self, msg_id: Any, timeout: float = 30.0) -> dict:
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m, timeout, f"response to {msg_id!r}")

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> dict:
        return self.response(self.request(method, params), timeout)

    def requests_from_server(self, method: str) -> list[dict]:
        with self._cond:
            return [m for m in self.messages if m.get("method") == method and "id" in m]

    def stderr(self) -> str:
        # pread, not seek + read: the server shares this file's offset, and a seek back to 0 would
        # make its next write overwrite what it logged before.
        fd = self._stderr.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", "replace")

    # -- LSP helpers --------------------------------------------------------------------------
    def initialize(self, root: Path | None = None, caps: dict | None = None, options: dict | None = None) -> dict:
        params = {"processId": None, "capabilities": caps or CAPS, "initializationOptions": options or {},
                  "rootUri": root.as_uri() if root else None}
        reply = self.call("initialize", params, timeout=120)
        assert "result" in reply, reply
        self.notify("initialized", {})
        return reply

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": version, "text": text}})

    def change(self, uri: str, text: str, version: Any) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def execute(self, command: str, args: dict, token: str | None = None) -> Any:
        params = {"command": command, "arguments": [args]}
        if token is not None:
            params["workDoneToken"] = token
        return self.request("workspace/executeCommand", params)

    def progress(self, token: str) -> list[dict]:
        with self._cond:
            return [m["params"]["value"] for m in self.messages
                    if m.get("method") == "$/progress" and m["params"]["token"] == token]

    def close(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            try:
                self.request("shutdown")
                self.notify("exit")
            except (BrokenPipeError, ValueError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except (BrokenPipeError, ValueError):
                pass
        return self.proc.returncode
