"""Regression tests for issue 15: a hostile raw JSON-RPC client against the real server over stdio.

The server is the product (``build_server`` + its stdio transport); only the engine is the
instant fake of ``tests/lsp/fake_engine_server.py`` (``slow…`` instructions decode in small
"forwards" that check the cancel event). Each test names the defect it pins down.
"""
from __future__ import annotations

import json
import os
import time

import pytest

from .raw_client import NO_ANSWER, RawClient

DOC = "".join(f"line_{i} = {i}\n" for i in range(10))
SLOW = "slow: rewrite everything"


def _uri(tmp_path, name: str = "doc.py") -> str:
    return (tmp_path / name).as_uri()


@pytest.fixture
def client(tmp_path):
    c = RawClient()
    c.initialize(tmp_path, options={"cad": {"applyEditTimeout": 1}})
    yield c
    c.close()


def _decoding(client: RawClient, token: str, timeout: float = 30.0) -> None:
    client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == token
                and str(m["params"]["value"].get("message", "")).startswith("decoding"), timeout, "decoding report")


def _no_traceback(reply: dict) -> None:
    assert "traceback" not in json.dumps(reply).lower(), reply


# -- 1: workspace/applyEdit unanswered or answered with garbage ---------------------------------
def test_unanswered_apply_edit_times_out_and_later_edits_still_work(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    client.answers["workspace/applyEdit"] = lambda m: NO_ANSWER
    t0 = time.perf_counter()
    reply = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix"}), timeout=15)
    waited = time.perf_counter() - t0
    print(f"\nunanswered applyEdit: command answered after {waited:.2f} s (applyEditTimeout=1)")
    result = reply["result"]
    assert result["applied"] is False and result["unconfirmed"] is True
    assert "did not answer workspace/applyEdit within 1 s" in result["message"]
    assert waited < 5
    client.answers["workspace/applyEdit"] = lambda m: {"applied": True}
    again = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix"}), timeout=15)
    assert again["result"]["applied"] is True


def test_apply_edit_answered_with_a_bare_string_still_answers_the_command(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    client.answers["workspace/applyEdit"] = lambda m: "ok"
    reply = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix"}), timeout=15)
    result = reply["result"]
    assert result["applied"] is False and result["unconfirmed"] is True
    assert "does not match the LSP result type" in result["message"]


# -- 2: shutdown, exit and end of input during a decode -----------------------------------------
def test_shutdown_during_decode_then_requests_are_refused_and_exit_is_clean(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    edit = client.execute("cad.applyEdit", {"uri": uri, "instruction": SLOW}, token="t-shutdown")
    _decoding(client, "t-shutdown")
    shutdown = client.call("shutdown", timeout=10)
    assert "error" not in shutdown and shutdown["result"] is None, shutdown
    assert client.response(edit, timeout=10)["error"]["code"] == -32800
    late = client.call("workspace/executeCommand",
                       {"command": "cad.applyEdit", "arguments": [{"uri": uri, "instruction": "fix"}]})
    assert late["error"]["code"] == -32600 and "shutdown" in late["error"]["message"]
    assert not client.requests_from_server("workspace/applyEdit")
    client.notify("exit")
    assert client.proc.wait(10) == 0


def test_exit_during_decode_ends_the_process_quickly(tmp_path):
    client = RawClient(env={"FAKE_STEP_S": "0.5"})
    client.initialize(tmp_path)
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    client.execute("cad.applyEdit", {"uri": uri, "instruction": SLOW}, token="t-exit")
    _decoding(client, "t-exit")
    t0 = time.perf_counter()
    client.notify("exit")
    code = client.proc.wait(15)
    print(f"\nexit during a decode: process ended after {time.perf_counter() - t0:.2f} s")
    assert code == 1  # exit without shutdown
    assert time.perf_counter() - t0 < 4
    assert "Traceback" not in client.stderr()
    client.close()


def test_stdin_closed_during_decode_exits_without_abort_or_traceback(tmp_path):
    client = RawClient(env={"FAKE_STEP_S": "0.5"})
    client.initialize(tmp_path)
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    client.execute("cad.applyEdit", {"uri": uri, "instruction": SLOW}, token="t-eof")
    _decoding(client, "t-eof")
    t0 = time.perf_counter()
    client.proc.stdin.close()
    code = client.proc.wait(15)
    print(f"\nstdin closed during a decode: exit code {code} after {time.perf_counter() - t0:.2f} s")
    assert code >= 0 and "Traceback" not in client.stderr(), client.stderr()
    assert time.perf_counter() - t0 < 4
    client.close()


# -- 3: bad input gets -32602 with a message, never a traceback ---------------------------------
@pytest.mark.parametrize("where", ["document", "instruction"])
def test_lone_surrogate_is_invalid_params(client, tmp_path, where):
    uri = _uri(tmp_path)
    client.open(uri, DOC + ("x = '\ud800'\n" if where == "document" else ""))
    instruction = "fix \udfff it" if where == "instruction" else "fix"
    reply = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": instruction}))
    assert reply["error"]["code"] == -32602 and "lone UTF-16 surrogate" in reply["error"]["message"]
    assert where in reply["error"]["message"]
    _no_traceback(reply)


def test_huge_integers_in_a_range_are_invalid_params(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    huge = {"start": {"line": 10**20, "character": 0}, "end": {"line": 10**20, "character": 0}}
    reply = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": "fix", "range": huge}))
    assert reply["error"]["code"] == -32602 and "between 0 and 2147483647" in reply["error"]["message"]
    _no_traceback(reply)
    budget = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": "fix",
                                                                "maxNewTokens": 10**30}))
    assert budget["error"]["code"] == -32602
    _no_traceback(budget)


def test_an_engine_bug_is_an_internal_error_without_a_traceback(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    reply = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": "crash"}))
    error = reply["error"]
    assert error["code"] == -32603 and "RuntimeError: an engine bug" in error["message"]
    assert error.get("data") is None
    _no_traceback(reply)
    assert "Traceback" in client.stderr()  # kept for the developers, in the server's log


# -- 4: didChange/didClose for documents that are not open --------------------------------------
def test_sync_notifications_for_unopened_documents_are_logged_not_shown(client, tmp_path):
    ghost = _uri(tmp_path, "ghost.py")
    client.change(ghost, "x = 1\n", 2)
    client.notify("textDocument/didClose", {"textDocument": {"uri": ghost}})
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    client.change(uri, DOC + "y = 2\n", "three")  # a string version
    client.change(uri, DOC + "z = 3\n", 1)        # not above the current version
    assert "result" in client.call("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0},
                                                "end": {"line": 0, "character": 0}}, "context": {"diagnostics": []}})
    logs = [m["params"]["message"] for m in client.messages if m.get("method") == "window/logMessage"]
    assert any("didChange for " + ghost in m and "not open" in m for m in logs), logs
    assert any("didClose for " + ghost in m for m in logs), logs
    assert not [m for m in client.messages if m.get("method") == "window/showMessage"]


# -- 5: a cancel through work-done progress is answered at once ---------------------------------
def test_progress_cancel_is_answered_at_once_running_or_queued(tmp_path):
    client = RawClient(env={"FAKE_STEP_S": "2.0"})  # forwards as slow as a loaded CPU's prefill
    try:
        client.initialize(tmp_path)
        uri = _uri(tmp_path)
        client.open(uri, DOC)
        first = client.execute("cad.applyEdit", {"uri": uri, "instruction": SLOW}, token="t-run")
        _decoding(client, "t-run")
        queued = client.execute("cad.applyEdit", {"uri": uri, "instruction": SLOW}, token="t-queued")
        client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == "t-queued"
                    and "queued (position 2)" in str(m["params"]["value"].get("message")), 10, "queued report")
        timings = {}
        for token, msg_id in (("t-queued", queued), ("t-run", first)):
            t0 = time.perf_counter()
            client.notify("window/workDoneProgress/cancel", {"token": token})
            reply = client.response(msg_id, timeout=30)
            timings[token] = time.perf_counter() - t0
            assert reply["error"]["code"] == -32800
        print(f"\nprogress cancel answered after: queued {timings['t-queued'] * 1000:.0f} ms, "
              f"running {timings['t-run'] * 1000:.0f} ms (a forward takes 2 s)")
        assert max(timings.values()) < 1.0
        assert not client.requests_from_server("workspace/applyEdit")
    finally:
        client.close()


# -- 6 and 9: unopened documents: workspace only, regular files only, off the event loop --------
def test_unopened_documents_are_read_only_inside_the_workspace(client, tmp_path):
    inside = tmp_path / "inside.py"
    inside.write_text(DOC)
    ok = client.response(client.execute("cad.previewEdit", {"uri": inside.as_uri(), "instruction": "fix"}))
    assert "+# edited: fix" in ok["result"]["diff"]
    outside = client.response(client.execute("cad.previewEdit", {"uri": "file:///etc/hostname",
                                                                 "instruction": "fix"}))
    assert outside["error"]["code"] == -32602 and "outside the workspace folders" in outside["error"]["message"]
    (tmp_path / "escape.py").symlink_to("/etc/hostname")
    link = client.response(client.execute("cad.previewEdit", {"uri": _uri(tmp_path, "escape.py"),
                                                             "instruction": "fix"}))
    assert link["error"]["code"] == -32602 and "outside the workspace folders" in link["error"]["message"]


def test_no_workspace_means_no_disk_reads(tmp_path):
    client = RawClient()
    try:
        client.initialize(None)
        (tmp_path / "a.py").write_text(DOC)
        reply = client.response(client.execute("cad.previewEdit", {"uri": _uri(tmp_path, "a.py"),
                                                                   "instruction": "fix"}))
        assert reply["error"]["code"] == -32602 and "no rootUri/workspaceFolders" in reply["error"]["message"]
    finally:
        client.close()


def test_fifo_in_the_workspace_is_refused_without_blocking(client, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    t0 = time.perf_counter()
    reply = client.response(client.execute("cad.previewEdit", {"uri": _uri(tmp_path, "pipe.py"),
                                                               "instruction": "fix"}), timeout=10)
    assert reply["error"]["code"] == -32602 and "not a regular file" in reply["error"]["message"]
    assert "result" in client.call("textDocument/codeAction", {
        "textDocument": {"uri": _uri(tmp_path, "pipe.py")}, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "context": {"diagnostics": []}},
        timeout=10)
    assert time.perf_counter() - t0 < 5


# -- 7: framing errors ----------------------------------------------------------------------------
def _frame(message: dict, header: bytes = b"Content-Length", delta: int = 0) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return header + b": %d\r\n\r\n" % (len(body) + delta) + body


def test_framing_errors_are_logged_and_the_stream_resynchronises(client):
    ping = {"method": "workspace/executeCommand", "params": {"command": "cad.cancelAll", "arguments": []}}
    client.send_raw(_frame({"id": "lower", **ping}, header=b"content-length"))
    assert client.response("lower")["result"] == {"cancelled": 0}
    client.send_raw(b"Content-Length: abc\r\n\r\n" + json.dumps({"jsonrpc": "2.0", "id": "nan", **ping}).encode())
    client.send_raw(_frame({"id": "after-nan", **ping}))
    assert "result" in client.response("after-nan")
    client.send_raw(b"X-Nothing: 1\r\n\r\n" + json.dumps({"jsonrpc": "2.0", "id": "nolen", **ping}).encode())
    client.send_raw(_frame({"id": "after-nolen", **ping}))
    assert "result" in client.response("after-nolen")
    client.send_raw(_frame({"id": "short", **ping}, delta=-5))
    assert client.response(None)["error"]["code"] == -32700
    client.send_raw(_frame({"id": "after-short", **ping}))
    assert "result" in client.response("after-short")
    client.send_raw(_frame({"id": "long", **ping}, delta=+7) + _frame({"id": "after-long", **ping}))
    assert "result" in client.response("long") and "result" in client.response("after-long")
    client.send_raw(_frame({"id": "stalled", **ping}, delta=+40))  # the rest never comes
    assert "result" in client.response("stalled", timeout=10)
    # A frame cut in half, then a whole one, then silence: the claimed length would swallow the
    # whole frame and wait forever for bytes that never come (the protocol-fuzz hang).
    cut = _frame({"id": "cut", **{**ping, "params": {**ping["params"], "pad": "x" * 400}}})
    client.send_raw(cut[: len(cut) // 2] + _frame({"id": "after-cut", **ping}))
    assert "result" in client.response("after-cut", timeout=10)
    logs = [m["params"]["message"] for m in client.messages if m.get("method") == "window/logMessage"]
    assert any("Content-Length b'abc' is not a number" in m for m in logs), logs
    assert any("a new message began" in m for m in logs), logs
    assert any("no Content-Length header" in m for m in logs), logs


def test_huge_content_length_is_refused_without_reading_it_into_memory(client):
    body = json.dumps({"jsonrpc": "2.0", "id": "huge", "method": "workspace/executeCommand",
                       "params": {"command": "cad.cancelAll", "arguments": []}}).encode()
    client.send_raw(b"Content-Length: %d\r\n\r\n" % 10**12 + body)
    reply = client.response("huge", timeout=10)
    assert reply["error"]["code"] == -32600 and "exceeds the server's limit" in reply["error"]["message"]
    assert "result" in client.call("workspace/executeCommand", {"command": "cad.cancelAll", "arguments": []})
    assert client.proc.poll() is None
    assert "exceeds the server's limit" in client.stderr()


# -- 8: a document closed and reopened during a decode is another document ---------------------
@pytest.mark.parametrize("how", ["close-reopen", "same-version-change"])
def test_document_replaced_under_the_same_version_discards_the_edit(tmp_path, how):
    client = RawClient(env={"FAKE_STEPS": "40"})
    try:
        client.initialize(tmp_path)
        uri = _uri(tmp_path)
        client.open(uri, DOC)
        edit = client.execute("cad.applyEdit", {"uri": uri, "instruction": SLOW}, token="t-reopen")
        _decoding(client, "t-reopen")
        if how == "close-reopen":
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            client.open(uri, "new = 1\nfile = 2\n", version=1)
        else:
            client.change(uri, "new = 1\nfile = 2\n", 1)
        result = client.response(edit, timeout=30)["result"]
        assert result["applied"] is False and result["discarded"] is True, result
        assert not client.requests_from_server("workspace/applyEdit")
    finally:
        client.close()


# -- 9: unanswered progress create, invalid codeAction params, life cycle -----------------------
def test_unanswered_progress_create_does_not_hang_the_edit(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    client.answers["window/workDoneProgress/create"] = lambda m: NO_ANSWER
    t0 = time.perf_counter()
    reply = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix"}), timeout=15)
    assert reply["result"]["applied"] is True
    assert time.perf_counter() - t0 < 5


def test_code_action_with_invalid_params_is_answered(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    for bad in ({"line": "zero", "character": 0}, {"line": 10**20, "character": 0}):
        reply = client.call("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
            "start": bad, "end": bad}, "context": {"diagnostics": []}}, timeout=10)
        assert reply["error"]["code"] == -32602 and "params" in reply["error"]["message"], reply
        _no_traceback(reply)


def test_requests_before_initialize_get_server_not_initialized():
    client = RawClient()
    try:
        reply = client.call("workspace/executeCommand", {"command": "cad.cancelAll", "arguments": []})
        assert reply["error"]["code"] == -32002 and "initialize" in reply["error"]["message"]
        _no_traceback(reply)
        assert "result" in client.call("initialize", {"processId": None, "capabilities": {}, "rootUri": None})
    finally:
        client.close()


# -- 10: a cancel that arrives while the client is applying the edit ----------------------------
def test_cancel_while_apply_edit_is_pending_reports_what_the_client_did(client, tmp_path):
    uri = _uri(tmp_path)
    client.open(uri, DOC)
    client.answers["workspace/applyEdit"] = lambda m: NO_ANSWER
    edit = client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix"}, token="t-late")
    pending = client.wait(lambda m: m.get("method") == "workspace/applyEdit", 10, "applyEdit request")
    client.notify("$/cancelRequest", {"id": edit})
    client.notify("window/workDoneProgress/cancel", {"token": "t-late"})
    time.sleep(0.2)
    client.send({"id": pending["id"], "result": {"applied": True}})
    reply = client.response(edit, timeout=10)
    assert "result" in reply and reply["result"]["applied"] is True, reply


def test_cancel_with_an_object_id_or_token_is_ignored_not_an_error(client):
    """lsprotocol structures any JSON into these fields; a dict used to raise "unhashable" in pygls."""
    for method, params in (("$/cancelRequest", {"id": {"a": 1}}), ("$/cancelRequest", {"id": [1]}),
                           ("window/workDoneProgress/cancel", {"token": {"a": 1}})):
        client.notify(method, params)
    assert "result" in client.call("workspace/executeCommand", {"command": "cad.cancelAll", "arguments": []})
    assert "unhashable" not in client.stderr() and "FeatureNotificationError" not in client.stderr()
    assert "is not an integer or a string" in client.stderr()


def test_a_request_error_is_logged_on_one_line_without_a_traceback(client, tmp_path):
    missing = (tmp_path / "missing.py").as_uri()
    reply = client.call("workspace/executeCommand", {"command": "cad.applyEdit",
                                                     "arguments": [{"uri": missing, "instruction": "fix"}]})
    assert reply["error"]["code"] == -32602 and "didOpen" in reply["error"]["message"], reply
    assert "answered with error -32602" in client.stderr()
    assert "Traceback" not in client.stderr() and "FeatureRequestError" not in client.stderr()
