"""Issue 13 item 1: protocol fuzzing of the REAL server (stdio, instant fake engine), seeded.

≥ 10,000 hostile messages per run (hypothesis, fixed seed, no shrinking: the server is stateful,
so a failure names the batch and the seed reproduces the whole run). After every batch every
owed response must have arrived and the process must be alive; after the storm a normal edit
must be applied exactly. ``benchmarks/reliability.py --fuzz-batches N`` runs longer storms.
"""
from __future__ import annotations

from tests.lsp.raw_client import RawClient

from .protocol_fuzz import check_response, normal_edit_works, run_storm


def test_ten_thousand_hostile_messages_then_a_normal_edit(tmp_path):
    stats = run_storm(tmp_path)
    print(f"\nprotocol fuzz: {stats.messages} messages in {stats.seconds:.1f} s, {stats.requests} requests "
          f"answered ({stats.errors}; {stats.edits_answered} edits computed), deaths {stats.deaths}, hangs {stats.hangs}")
    assert stats.messages >= 10_000
    assert stats.deaths == 0 and stats.hangs == 0
    # The storm reached the commands. How many edits end in a result depends on timing (a storm
    # message that changes or closes the document first turns the edit into an error): 93 on a CI
    # machine, 178 here, from the same seed. The floor only proves the commands were exercised.
    assert stats.edits_answered >= 20 and stats.errors.get(-32602, 0) > 100


def test_requests_before_initialize_then_big_documents(tmp_path):
    """Before initialize every request is -32002 (or a framing error); then 10 MB and odd documents."""
    client = RawClient(env={"FAKE_STEPS": "1"})
    try:
        for method in ("workspace/executeCommand", "textDocument/codeAction", "shutdown", "foo/bar"):
            for params in ({"command": "cad.applyEdit", "arguments": []}, None):
                reply = client.call(method, params)
                check_response(reply, method.encode())
                assert reply["error"]["code"] in (-32002, -32602), reply  # params that do not fit: -32602 first
                if method in ("shutdown", "foo/bar") or params and method == "workspace/executeCommand":
                    assert reply["error"]["code"] == -32002 and "initialize" in reply["error"]["message"], reply
        client.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///x.py", "languageId": "python",
                                                                "version": 1, "text": "x"}})
        client.initialize(tmp_path, options={"cad": {"applyEditTimeout": 2}})
        big = "".join(f"value_{i} = {i}\n" for i in range(700_000))  # ~10 MB
        assert len(big) > 10_000_000
        for k, text in enumerate([big, "no final newline", "crlf\r\nonly\r\n", "cr\ronly\r", "mixed\r\nends\n\r",
                                  "nul\x00inside\n", ""]):
            uri = (tmp_path / f"odd{k}.py").as_uri()
            client.open(uri, text)
            for instruction in ("fix", "x" * 100_000, ""):
                msg_id = client.execute("cad.previewEdit", {"uri": uri, "instruction": instruction})
                reply = client.response(msg_id, timeout=120)
                check_response(reply, b"previewEdit")
                if instruction == "":
                    assert reply["error"]["code"] == -32602
        normal_edit_works(client, tmp_path)
        assert client.close() == 0
    finally:
        client.close()
