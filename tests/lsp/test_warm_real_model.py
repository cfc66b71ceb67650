"""Warm-up over the real server (``python -m cad_lsp --preload``, the default model, stdio): a document
left alone after didOpen/didChange has its prompt prefilled, and a change recomputes only its tail."""
from __future__ import annotations

import re

import pytest

from .raw_client import REAL_SERVER, RawClient

pytestmark = [pytest.mark.real_model]

DOC = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30))
_WARM = re.compile(r"warm-up warm: (\d+)/(\d+) prompt tokens cached \((\d+) computed, (\d+) reused\)")


def _warm_log(client: RawClient, uri: str, after: int) -> re.Match:
    """The first warm-up log line of ``uri`` among the messages received after the first ``after``."""
    old = {id(m) for m in client.messages[:after]}

    def logged(message: dict) -> bool:
        text = (message.get("params") or {}).get("message", "")
        return (id(message) not in old and message.get("method") == "window/logMessage"
                and text.startswith(uri) and "warm-up" in text)
    message = client.wait(logged, timeout=300, what=f"warm-up log of {uri}")
    match = _WARM.search(message["params"]["message"])
    assert match, message["params"]["message"]
    assert message["params"]["type"] == 4  # MessageType.Log: the server log, never a popup
    return match


def test_a_document_left_alone_is_prefilled_and_a_change_recomputes_only_its_tail(tmp_path):
    client = RawClient([*REAL_SERVER, "--preload", "--device", "cpu"])
    try:
        client.initialize(tmp_path, options={"cad": {"maxNewTokens": 8, "applyTruncated": True}})
        uri = (tmp_path / "warm.py").as_uri()
        client.open(uri, DOC)
        first = _warm_log(client, uri, 0)
        cached, total, computed, reused = map(int, first.groups())
        assert cached == total == computed + reused and total > 600  # the whole numbered document
        seen = len(client.messages)
        client.change(uri, DOC.replace("return x + 25", "return x - 25"), 2)
        second = _warm_log(client, uri, seen)
        cached2, total2, computed2, reused2 = map(int, second.groups())
        assert cached2 == total2 and reused2 > 0.7 * total2 and 0 < computed2 < 0.3 * total2
        reply = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": "Fix f3."}), timeout=300)
        assert "result" in reply, reply
    finally:
        client.close()
