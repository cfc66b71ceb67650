"""Issue 15 regressions that need the REAL engine: ``python -m cad_lsp --preload`` with the default
model, driven by the raw JSON-RPC client over stdio.

Oversize inputs must be refused before the whole document is tokenized (11), the real
tokenizer must never see a lone surrogate (3), a work-done-progress cancel must be answered at
once even while a forward runs (5), and closing stdin during a real decode must not abort the
process (2). Decodes are kept short or cancelled early.
"""
from __future__ import annotations

import time

import pytest

from .long_document import long_document
from .raw_client import REAL_SERVER, RawClient

pytestmark = [pytest.mark.real_model]

DOC = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(20))
SERVER = [*REAL_SERVER, "--preload", "--device", "cpu"]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    c = RawClient(SERVER)
    c.initialize(root, options={"cad": {"maxNewTokens": 8, "applyTruncated": True}})
    c.root = root
    warm = (root / "warm.py").as_uri()
    c.open(warm, DOC)
    c.response(c.execute("cad.previewEdit", {"uri": warm, "instruction": "x", "maxNewTokens": 1}), timeout=600)
    yield c
    c.close()


def _opened(client: RawClient, uri: str, text: str) -> None:
    client.open(uri, text)
    client.call("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []}}, timeout=120)  # answered after didOpen was processed


def _uri(client: RawClient, name: str) -> str:
    return (client.root / name).as_uri()


def test_ten_megabyte_document_is_refused_before_tokenizing(client):
    uri = _uri(client, "huge.py")
    _opened(client, uri, "value = 1  # a line that costs tokens\n" * 270_000)  # ~10 MB
    t0 = time.perf_counter()
    reply = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "Fix it."}), timeout=300)
    took = time.perf_counter() - t0
    print(f"\n10 MB document refused after {took:.2f} s")
    error = reply["error"]
    assert error["code"] == -32803 and error["data"]["error"] == "ContextOverflowError"
    assert "document is too long" in error["message"] and "range-scoped edit" in error["message"]
    assert took < 5


def test_huge_instruction_is_blamed_not_the_document(client):
    uri = _uri(client, "small.py")
    _opened(client, uri, DOC)
    t0 = time.perf_counter()
    reply = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": "please " * 15_000}),
                            timeout=300)  # ~100 kB
    print(f"\n100 kB instruction refused after {time.perf_counter() - t0:.2f} s")
    error = reply["error"]
    assert error["data"]["error"] == "ContextOverflowError"
    assert "instruction is too long" in error["message"] and "Shorten the instruction" in error["message"]


def test_lone_surrogate_never_reaches_the_tokenizer(client):
    uri = _uri(client, "surrogate.py")
    _opened(client, uri, DOC + "s = '\ud83d'\n")
    reply = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": "Fix it."}), timeout=300)
    assert reply["error"]["code"] == -32602 and "lone UTF-16 surrogate (U+D83D)" in reply["error"]["message"]
    assert "traceback" not in str(reply).lower()


def _start_long_edit(client: RawClient, uri: str, token: str):
    """Start a regen edit of a long document (opened at `uri`); return once it runs (its prefill)."""
    msg_id = client.request("workspace/executeCommand", {
        "command": "cad.applyEdit", "workDoneToken": token,
        "arguments": [{"uri": uri, "instruction": "Rewrite it.", "strategy": "regen", "maxNewTokens": 200}]})
    client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["token"] == token
                and str(m["params"]["value"].get("message", "")).startswith(("running", "decoding")), 300, "running")
    return msg_id


def test_progress_cancel_of_a_real_decode_is_answered_at_once(client):
    uri = _uri(client, "cancel.py")
    _opened(client, uri, long_document("cancel"))
    msg_id = _start_long_edit(client, uri, "t-real-cancel")
    t0 = time.perf_counter()
    client.notify("window/workDoneProgress/cancel", {"token": "t-real-cancel"})
    reply = client.response(msg_id, timeout=120)
    took = time.perf_counter() - t0
    print(f"\nwork-done progress cancel of a real decode answered after {took * 1000:.0f} ms")
    assert reply["error"]["code"] == -32800
    assert took < 1.0


def test_stdin_closed_during_a_real_decode_does_not_abort(tmp_path):
    client = RawClient(SERVER)
    try:
        client.initialize(tmp_path)
        uri = (tmp_path / "eof.py").as_uri()
        client.open(uri, long_document("eof"))
        _start_long_edit(client, uri, "t-real-eof")
        t0 = time.perf_counter()
        client.proc.stdin.close()
        code = client.proc.wait(60)
        print(f"\nstdin closed during a real decode: exit code {code} after {time.perf_counter() - t0:.2f} s")
        assert code >= 0, client.stderr()[-3000:]
        assert "Traceback" not in client.stderr(), client.stderr()[-3000:]
    finally:
        client.close()
