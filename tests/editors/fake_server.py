"""A scripted stand-in for `cad-lsp` that lets the editor-client tests check client mechanics fast.

It speaks real LSP over stdio (Content-Length framing, no pygls) and implements the server contract
the clients code against (docs/ARCHITECTURE.md "cad_lsp commands"), with a deterministic edit
instead of a model:

- `cad.applyEdit` / `cad.previewEdit` `[{uri, instruction, range?}]`: the instruction
  `upper` upper-cases the edited lines; any instruction containing `slow` first spends ~20 s in
  small steps (reporting progress, checking for cancellation). Apply sends a versioned
  `workspace/applyEdit` of one TextEdit per changed line, then returns `{applied, message, stats}`.
- Work-done progress with the client's `workDoneToken` (cancellable); `$/cancelRequest` and
  `window/workDoneProgress/cancel` both stop a running command (error -32800).
- `cad.previewEdit` also returns `previewId` and `newText`; `cad.applyPreview [{previewId}]`
  applies that preview's edits without running the edit again (refused if the document changed).
- `warn` in the instruction: a `window/showMessage` warning about the edit arrives before its
  result (as the real server sends for truncated programs). `stuck`: the edit stays "queued
  (position 2)" until cancelled, then ends its progress and answers only 5 s later (as a queued
  job on the real server notices cancellation when it reaches the worker).
- `textDocument/codeAction`: "Apply edit instruction…" (`[{uri, range}]`, no instruction) and
  "Apply: upper" (`[{uri, instruction: "upper", range}]`).

Every message received is appended as one JSON line to `$FAKE_CAD_LOG` (if set) so tests can
assert what the client sent.
"""
from __future__ import annotations

import difflib
import json
import os
import sys
import threading
import time

REQUEST_CANCELLED = -32800


class Server:
    def __init__(self) -> None:
        self.out_lock = threading.Lock()
        self.docs: dict[str, tuple[int, str]] = {}
        self.cancelled_requests: set = set()
        self.cancelled_tokens: set = set()
        self.pending_client: dict[int, threading.Event] = {}
        self.client_results: dict[int, dict] = {}
        self.next_id = 1000
        self.previews: dict[str, tuple[str, int, list[str], list[str]]] = {}
        self.log_path = os.environ.get("FAKE_CAD_LOG")

    # -- transport -------------------------------------------------------------------------------
    def send(self, message: dict) -> None:
        message["jsonrpc"] = "2.0"
        body = json.dumps(message).encode()
        with self.out_lock:
            sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            sys.stdout.buffer.flush()

    def read(self) -> dict | None:
        length = None
        while True:
            line = sys.stdin.buffer.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(sys.stdin.buffer.read(length or 0))

    def log(self, message: dict) -> None:
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(message) + "\n")

    def request_client(self, method: str, params: dict) -> dict:
        with self.out_lock:
            self.next_id += 1
            rid = self.next_id
        event = threading.Event()
        self.pending_client[rid] = event
        self.send({"id": rid, "method": method, "params": params})
        event.wait(30)
        return self.client_results.pop(rid, {})

    # -- the edit --------------------------------------------------------------------------------
    @staticmethod
    def edited_lines(text: str, instruction: str, rng: dict | None) -> list[str]:
        lines = text.split("\n")
        first, last = 0, len(lines) - 1
        if rng:
            first = rng["start"]["line"]
            last = rng["end"]["line"]
            if rng["end"]["character"] == 0 and last > first:
                last -= 1
        new = list(lines)
        if "upper" in instruction:
            for i in range(first, last + 1):
                new[i] = lines[i].upper()
        return new

    def run_command(self, rid, command: str, args: dict, token) -> None:
        def cancelled() -> bool:
            return rid in self.cancelled_requests or (token is not None and token in self.cancelled_tokens)

        def progress(value: dict) -> None:
            if token is not None:
                self.send({"method": "$/progress", "params": {"token": token, "value": value}})

        if command == "cad.applyPreview":
            self.apply_preview(rid, args, progress)
            return
        uri = args["uri"]
        version, text = self.docs[uri]
        if "stuck" in args.get("instruction", ""):
            progress({"kind": "begin", "title": "Copy-as-Decode", "cancellable": True,
                      "message": "queued (position 2)"})
            while not cancelled():
                time.sleep(0.05)
            time.sleep(5.0)
            progress({"kind": "end", "message": "cancelled"})
            self.send({"id": rid, "error": {"code": REQUEST_CANCELLED, "message": "cancelled while queued"}})
            return
        progress({"kind": "begin", "title": "Copy-as-Decode", "cancellable": True, "message": "decoding"})
        steps = 200 if "slow" in args.get("instruction", "") else 3
        for step in range(steps):
            if cancelled():
                progress({"kind": "end", "message": "cancelled"})
                self.send({"id": rid, "error": {"code": REQUEST_CANCELLED, "message": "cancelled"}})
                return
            progress({"kind": "report", "message": f"step {step}", "percentage": int(100 * step / steps)})
            time.sleep(0.1)
        if "warn" in args.get("instruction", ""):
            self.send({"method": "window/showMessage", "params": {
                "type": 2, "message": "Copy-as-Decode: the program hit max_new_tokens and was closed early"}})
        old = text.split("\n")
        new = self.edited_lines(text, args.get("instruction", ""), args.get("range"))
        stats = {"decoded_tokens": 7, "copied_tokens": len(old), "ops": 1, "wall_ms": 1.0}
        if command == "cad.previewEdit":
            diff = "".join(
                difflib.unified_diff(
                    [line + "\n" for line in old], [line + "\n" for line in new], "a/doc", "b/doc"
                )
            )
            progress({"kind": "end", "message": "preview ready"})
            preview_id = f"p{len(self.previews) + 1}"
            self.previews[preview_id] = (uri, version, old, new)
            self.send({"id": rid, "result": {"diff": diff, "stats": stats, "previewId": preview_id,
                                             "newText": "\n".join(new)}})
            return
        self.send_edits(rid, uri, version, old, new, stats, progress)

    def apply_preview(self, rid, args: dict, progress) -> None:
        progress({"kind": "begin", "title": "Copy-as-Decode", "cancellable": True, "message": "applying preview"})
        uri, version, old, new = self.previews.pop(args["previewId"])
        if self.docs[uri][0] != version:
            progress({"kind": "end", "message": "discarded"})
            self.send({"id": rid, "result": {"applied": False, "discarded": True, "message": "document changed"}})
            return
        self.send_edits(rid, uri, version, old, new, {"decoded_tokens": 0, "reused_preview": True}, progress)

    def send_edits(self, rid, uri, version, old, new, stats, progress) -> None:
        edits = [
            {
                "range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": len(old[i])}},
                "newText": new[i],
            }
            for i in range(len(old))
            if old[i] != new[i]
        ]
        applied = False
        if edits:
            reply = self.request_client(
                "workspace/applyEdit",
                {
                    "label": "cad",
                    "edit": {
                        "documentChanges": [
                            {"textDocument": {"uri": uri, "version": version}, "edits": edits}
                        ]
                    },
                },
            )
            applied = bool(reply.get("result", {}).get("applied"))
        progress({"kind": "end", "message": "applied" if applied else "no change"})
        message = f"changed {len(edits)} line(s)" if applied else "the edit changed nothing"
        self.send({"id": rid, "result": {"applied": applied, "message": message, "stats": stats}})

    # -- dispatch --------------------------------------------------------------------------------
    def handle(self, msg: dict) -> bool:
        self.log(msg)
        method = msg.get("method")
        rid = msg.get("id")
        params = msg.get("params") or {}
        if method is None:  # a response to one of our requests
            self.client_results[rid] = msg
            event = self.pending_client.pop(rid, None)
            if event:
                event.set()
        elif method == "initialize":
            commands = ["cad.applyEdit", "cad.previewEdit", "cad.applyPreview"]
            caps = {
                "textDocumentSync": 1,
                "executeCommandProvider": {"commands": commands},
                "codeActionProvider": True,
            }
            self.send({"id": rid, "result": {"capabilities": caps, "serverInfo": {"name": "fake-cad"}}})
        elif method == "textDocument/didOpen":
            doc = params["textDocument"]
            self.docs[doc["uri"]] = (doc["version"], doc["text"])
        elif method == "textDocument/didChange":
            doc = params["textDocument"]
            self.docs[doc["uri"]] = (doc["version"], params["contentChanges"][-1]["text"])
        elif method == "textDocument/codeAction":
            uri = params["textDocument"]["uri"]
            rng = params["range"]
            actions = [
                {
                    "title": "Apply edit instruction…",
                    "kind": "refactor.rewrite",
                    "command": {"title": "Apply edit instruction…", "command": "cad.applyEdit",
                                "arguments": [{"uri": uri, "range": rng}]},
                },
                {
                    "title": "Apply: upper",
                    "kind": "refactor.rewrite",
                    "command": {"title": "Apply: upper", "command": "cad.applyEdit",
                                "arguments": [{"uri": uri, "instruction": "upper", "range": rng}]},
                },
            ]
            self.send({"id": rid, "result": actions})
        elif method == "workspace/executeCommand":
            args = (params.get("arguments") or [{}])[0]
            token = params.get("workDoneToken")
            threading.Thread(
                target=self.run_command, args=(rid, params["command"], args, token), daemon=True
            ).start()
        elif method == "$/cancelRequest":
            self.cancelled_requests.add(params["id"])
        elif method == "window/workDoneProgress/cancel":
            self.cancelled_tokens.add(params["token"])
        elif method == "shutdown":
            self.send({"id": rid, "result": None})
        elif method == "exit":
            return False
        elif rid is not None:
            self.send({"id": rid, "error": {"code": -32601, "message": f"fake server: no {method}"}})
        return True


def main() -> None:
    server = Server()
    while True:
        msg = server.read()
        if msg is None or not server.handle(msg):
            break


if __name__ == "__main__":
    main()
