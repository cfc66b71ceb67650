"""End to end over real stdio: ``python -m cad_lsp --preload`` with the REAL default model.

One server per module (the model loads once). Decodes are kept short (a few tokens);
the long-running edits used for cancellation and queueing (a long document's prefill) are cancelled early.
"""
from __future__ import annotations

import asyncio
import time

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from evaluation.corpus import data_dir
from engine.program.grammar import CopyLines, parse
from engine.program.resolver import resolve

from .long_document import long_document
from .lsp_client import (
    NO_APPLY_CAPS, execute, kinds, messages, new_token, open_doc, set_text, start_client, wait_for,
)

pytestmark = [pytest.mark.real_model, pytest.mark.asyncio(loop_scope="module")]

SHORT = 8  # max new tokens for edits that must finish
LONG = 200  # regen budget for decodes that are cancelled long before they finish


def _document() -> str:
    """HumanEval/0 (has_close_elements), buggy: the document the paper's instruction fixes."""
    import json

    row = json.loads((data_dir() / "python.jsonl").read_text().splitlines()[0])
    return row["declaration"] + row["buggy_solution"]


DOC = _document()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client():
    client = await start_client("--preload", "--device", "cpu",
                                init_options={"cad": {"maxNewTokens": SHORT, "applyTruncated": True}})
    yield client
    await client.shutdown_session()


def _uri(name: str) -> str:
    return f"file:///tmp/cad-e2e/{name}.py"


def _check_applied(client, uri: str, original: str, reply: dict) -> str:
    """The client's text equals resolve(program, original) and copied lines were not edited."""
    program = parse(reply["program"])
    text = client.docs.texts[uri]
    assert text == resolve(program, original, "clipped").text
    return text


async def start_long_edit(client, uri: str, token, **kwargs):
    """Open a long document at `uri`, start a regen edit of it and return (document, future) once the
    server reports it running: its prefill keeps it in flight for seconds (tests/lsp/long_document.py)."""
    document = long_document(uri.rsplit("/", 1)[-1].removesuffix(".py"))
    open_doc(client, uri, document)
    future = execute(client, "cad.applyEdit", {"uri": uri, "instruction": "Rewrite it.", "strategy": "regen",
                                               "maxNewTokens": LONG}, token=token, **kwargs)
    await wait_for(lambda: any(m.startswith(("running", "decoding")) for m in messages(client, token)),
                   what="running")
    return document, future


async def test_code_action_is_listed(client):
    uri = _uri("actions")
    open_doc(client, uri, DOC)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[])))
    prompt = [a for a in actions if a.title == "Apply edit instruction…"]
    assert len(prompt) == 1
    assert prompt[0].kind == types.CodeActionKind.RefactorRewrite
    assert prompt[0].command.command == "cad.applyEdit"
    assert list(prompt[0].command.arguments) == [{"uri": uri}]  # no instruction: the editor prompts


async def test_command_without_instruction_is_an_error(client):
    uri = _uri("noinstr")
    open_doc(client, uri, DOC)
    with pytest.raises(JsonRpcException, match="needs an instruction") as error:
        await execute(client, "cad.applyEdit", {"uri": uri})
    assert "cad: " in str(error.value) and "Apply: <instruction>" in str(error.value)  # what to do without a plugin


async def test_apply_edit_sends_versioned_edit_with_progress(client):
    uri = _uri("apply")
    open_doc(client, uri, DOC)
    token = new_token()
    before = len(client.docs.applied)
    t0 = time.perf_counter()
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {
        "uri": uri, "instruction": "Fix bugs in has_close_elements."}, token=token), 600)
    elapsed = (time.perf_counter() - t0) * 1000
    stats = reply["stats"]
    print(f"\napplyEdit: client {elapsed:.0f} ms, server {stats['server_ms']:.0f} ms, "
          f"engine {stats['engine_ms']:.0f} ms, queued {stats['queue_ms']:.0f} ms, "
          f"overhead {elapsed - stats['engine_ms'] - stats['queue_ms']:.1f} ms")
    assert kinds(client, token)[0] == "begin" and kinds(client, token)[-1] == "end"
    if reply["edits"]:
        assert reply["applied"] is True
        edit = client.docs.applied[before].edit.document_changes[0]
        assert edit.text_document.version == 1  # the snapshot's version
    _check_applied(client, uri, DOC, reply)
    assert stats["decoded_tokens"] <= SHORT + 16
    assert any("ms (engine" in m.message for m in client.log_messages)


async def test_pasted_snippet_is_merged_and_applied_without_decoding(client):
    """A chat-style snippet with placeholders anchors at one place: applied exactly, nothing decoded."""
    uri = _uri("snippet")
    open_doc(client, uri, DOC)
    instruction = ("Apply this fix:\n```python\n        for idx2, elem2 in enumerate(numbers):\n"
                   "            if idx != idx2:\n                distance = abs(elem - elem2)\n"
                   "                if distance < threshold:\n                # ... existing code ...\n```")
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": instruction}), 600)
    assert reply["applied"] is True and reply["stats"]["planner"] == "snippet-merge"
    assert reply["stats"]["decoded_tokens"] == 0 and reply["stats"]["forwards"] == 0
    text = _check_applied(client, uri, DOC, reply)
    assert text == DOC.replace("distance = elem - elem2", "distance = abs(elem - elem2)")
    assert any("merged by its anchors" in m.message for m in client.log_messages)


async def test_pasted_diff_is_applied_without_decoding(client):
    """A chat model's unified diff (no line numbers) is placed by its context lines and applied exactly."""
    uri = _uri("diff")
    open_doc(client, uri, DOC)
    instruction = ("Here is the fix:\n```diff\n@@ ... @@\n             if idx != idx2:\n"
                   "-                distance = elem - elem2\n+                distance = abs(elem - elem2)\n"
                   "                 if distance < threshold:\n```\nIt takes the absolute difference.")
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": instruction}), 600)
    assert reply["applied"] is True and reply["stats"]["planner"] == "patch"
    assert reply["stats"]["forwards"] == 0 and reply["message"].endswith("(pasted diff applied by its context lines, no decoding)")
    text = _check_applied(client, uri, DOC, reply)
    assert text == DOC.replace("distance = elem - elem2", "distance = abs(elem - elem2)")
    assert any("pasted diff applied" in m.message for m in client.log_messages)


async def test_a_diff_for_another_file_is_refused_and_nothing_changes(client):
    """A diff whose context is not in this document: an error that says which hunk, no decode, no edit."""
    uri = _uri("otherdiff")
    open_doc(client, uri, DOC)
    before = len(client.docs.applied)
    instruction = "```diff\n--- a/util.py\n+++ b/util.py\n@@ -1,2 +1,2 @@\n-import os\n+import sys\n def f():\n```"
    with pytest.raises(JsonRpcException, match="the pasted diff could not be applied as is: hunk 1 does not fit"):
        await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": instruction}), 600)
    assert len(client.docs.applied) == before and client.docs.texts[uri] == DOC
    assert any("Nothing was changed" in m.message for m in client.messages)


async def test_auto_strategy_says_what_it_ran(client):
    """strategy "auto" on the default weights (trained for edit programs only) runs cad and says so."""
    uri = _uri("auto")
    open_doc(client, uri, DOC)
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {
        "uri": uri, "instruction": "Fix bugs in has_close_elements.", "strategy": "auto"}), 600)
    assert reply["stats"]["picked"] == "cad" and reply["stats"]["predicted_ms"] == {}
    assert reply["message"].endswith("(auto ran cad)")
    _check_applied(client, uri, DOC, reply)
    assert any("auto picked cad" in m.message for m in client.log_messages)


async def test_preview_returns_diff_without_applying(client):
    uri = _uri("preview")
    open_doc(client, uri, DOC)
    before = len(client.docs.applied)
    reply = await asyncio.wait_for(execute(client, "cad.previewEdit", {
        "uri": uri, "instruction": "Fix bugs in has_close_elements.", "strategy": "regen"}), 600)
    assert len(client.docs.applied) == before and client.docs.texts[uri] == DOC
    new = resolve(parse(reply["program"]), DOC, "clipped").text
    assert (reply["diff"] == "") == (new == DOC)
    if reply["diff"]:
        assert reply["diff"].startswith(f"--- a/{uri}")


async def test_cancel_request_stops_decode(client):
    uri = _uri("cancel")
    token, msg_id = new_token(), "cancel-me"
    before = len(client.docs.applied)
    document, future = await start_long_edit(client, uri, token, msg_id=msg_id)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException, match="[Cc]ancel"):
        await asyncio.wait_for(future, 600)
    await wait_for(lambda: "end" in kinds(client, token), what="progress end")
    assert messages(client, token)[-1] == "cancelled"
    assert len(client.docs.applied) == before and client.docs.texts[uri] == document


async def test_progress_cancel_stops_decode(client):
    uri = _uri("pcancel")
    token = new_token()
    document, future = await start_long_edit(client, uri, token)
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcException, match="[Cc]ancel"):
        await asyncio.wait_for(future, 600)
    assert client.docs.texts[uri] == document


async def test_queued_request_answered_while_decoding(client):
    uri = _uri("queue")
    first_token, second_token = new_token(), new_token()
    document, first = await start_long_edit(client, uri, first_token)
    t0 = time.perf_counter()
    second = execute(client, "cad.applyEdit", {"uri": uri, "instruction": "Rewrite it."}, token=second_token)
    await wait_for(lambda: "queued (position 2)" in messages(client, second_token), what="queued report")
    queued_ms = (time.perf_counter() - t0) * 1000
    t1 = time.perf_counter()
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[])))
    action_ms = (time.perf_counter() - t1) * 1000
    print(f"\nqueued report after {queued_ms:.1f} ms; codeAction answered in {action_ms:.1f} ms during a decode")
    assert actions and not first.done()  # both answered before the first edit finished
    cancelled = await execute(client, "cad.cancelAll", {})
    assert cancelled["cancelled"] == 2
    for future in (first, second):
        with pytest.raises(JsonRpcException, match="[Cc]ancel"):
            await asyncio.wait_for(future, 600)
    assert client.docs.texts[uri] == document


async def test_document_changed_mid_decode_is_discarded(client):
    uri = _uri("changed")
    token = new_token()
    before_msgs, before_applied = len(client.messages), len(client.docs.applied)
    document, future = await start_long_edit(client, uri, token)
    # Typing on every line overlaps whatever the edit rewrites (typing elsewhere is rebased: test_rebase).
    set_text(client, uri, "\n".join("#" + line for line in document.split("\n")))
    reply = await asyncio.wait_for(future, 600)
    assert reply["applied"] is False and reply["discarded"] is True
    assert "changed while decoding" in reply["message"]
    assert len(client.docs.applied) == before_applied
    assert any("changed while decoding" in m.message for m in client.messages[before_msgs:])


async def test_instruction_comment_action_consumes_comment(client):
    uri = _uri("comment")
    lines = DOC.split("\n")
    lines.insert(1, "    # cad: use a set instead of a list")
    text = "\n".join(lines)
    open_doc(client, uri, text)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[])))
    comment = [a for a in actions if a.title == "Apply: use a set instead of a list"]
    assert len(comment) == 1
    args = comment[0].command.arguments[0]
    assert args["instruction"] == "use a set instead of a list" and args["comment"]["line"] == 1
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", dict(args, strategy="regen")), 600)
    program = parse(reply["program"])
    assert not any(isinstance(op, CopyLines) and op.start <= 2 <= op.end for op in program)
    _check_applied(client, uri, text, reply)


async def test_range_scoped_edit_keeps_other_lines(client):
    uri = _uri("range")
    open_doc(client, uri, DOC)
    lines = DOC.split("\n")
    first, last = 2, 4  # LSP lines 2..4 == program lines 3..5
    rng = {"start": {"line": first, "character": 0}, "end": {"line": last + 1, "character": 0}}
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {
        "uri": uri, "instruction": "Fix bugs in has_close_elements.", "range": rng, "strategy": "regen"}), 600)
    text = _check_applied(client, uri, DOC, reply)
    new_lines = text.split("\n")
    tail = len(lines) - (last + 1)
    assert new_lines[:first] == lines[:first]
    assert new_lines[len(new_lines) - tail:] == lines[last + 1:]


async def test_client_without_apply_edit_is_refused():
    client = await start_client(caps=NO_APPLY_CAPS)
    try:
        uri = _uri("refused")
        open_doc(client, uri, DOC)
        with pytest.raises(JsonRpcException, match="does not support workspace/applyEdit"):
            await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": "x"}), 120)
        await wait_for(lambda: client.messages, timeout=30, what="showMessage")
        assert "workspace/applyEdit" in client.messages[-1].message
    finally:
        await client.shutdown_session()


async def test_utf8_position_encoding_is_negotiated():
    caps = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8,
                                                                    types.PositionEncodingKind.Utf16]))
    client = await start_client(caps=caps)
    try:
        assert client.init_result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
        uri = _uri("utf8")
        text = "s = '😀é'\n# cad: shorten it\nx = 1\n"
        open_doc(client, uri, text)
        # Select line 1 only, ending at its last character in UTF-8 units (16 bytes).
        rng = types.Range(types.Position(1, 0), types.Position(1, len("# cad: shorten it".encode())))
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
            context=types.CodeActionContext(diagnostics=[])))
        titles = [a.title for a in actions]
        assert titles == ["Apply edit instruction…", "Apply: shorten it"]
        prompt, comment = (a.command.arguments[0] for a in actions)
        assert "range" in prompt and "range" not in comment  # inside the comment line: a cursor, not a scope
        wider = types.Range(types.Position(1, 0), types.Position(2, 3))
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=wider,
            context=types.CodeActionContext(diagnostics=[])))
        assert actions[1].command.arguments[0]["range"]["end"] == {"line": 2, "character": 3}
    finally:
        await client.shutdown_session()


async def test_engine_error_is_shown_and_returned(client):
    uri = _uri("overflow")
    big = "value = 1  # a line that costs tokens\n" * 4000  # far beyond the model's context
    open_doc(client, uri, big)
    before = len(client.messages)
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": "Fix it."}), 600)
    assert "context" in str(info.value).lower()
    await wait_for(lambda: len(client.messages) > before, timeout=30, what="showMessage")
    assert "context" in client.messages[-1].message.lower()
    assert client.docs.texts[uri] == big


async def test_unknown_document_is_a_clear_error(client):
    with pytest.raises(JsonRpcException, match="not open in the editor"):
        await execute(client, "cad.previewEdit", {"uri": "file:///nonexistent/cad/x.py", "instruction": "x"})


async def test_workspace_configuration_is_read_and_validated(client):
    client.set_configuration({"strategy": "regen", "maxNewTokens": 7}, section="cad")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for(lambda: any("workspace/configuration" in m.message and "max_new_tokens=7" in m.message
                               for m in client.log_messages), timeout=60, what="settings log")
    before = len(client.messages)
    client.set_configuration({"resolverMode": "loose"}, section="cad")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for(lambda: len(client.messages) > before, timeout=60, what="settings error")
    assert "resolverMode" in client.messages[-1].message
    client.set_configuration({"maxNewTokens": SHORT, "strategy": "cad"}, section="cad")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for(lambda: any(f"max_new_tokens={SHORT}" in m.message and "strategy='cad'" in m.message
                               for m in client.log_messages[-3:]), timeout=60, what="settings restored")


async def test_truncated_program_is_not_applied_by_default(client):
    """A program cut off by the budget would drop the rest of the document: refused unless opted in."""
    client.set_configuration({"maxNewTokens": 4, "strategy": "cad", "applyTruncated": False}, section="cad")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for(lambda: any("apply_truncated=False" in m.message for m in client.log_messages[-3:]),
                   timeout=60, what="settings applied")
    uri = _uri("truncated")
    open_doc(client, uri, DOC)
    before = len(client.docs.applied)
    try:
        reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {
            "uri": uri, "instruction": "Rewrite has_close_elements with a sorted pass."}), 600)
    finally:
        client.set_configuration({"maxNewTokens": SHORT, "strategy": "cad", "applyTruncated": True}, section="cad")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    print("truncated:", reply["stats"]["truncated"], reply.get("message"))
    if reply["stats"]["truncated"]:
        assert reply["applied"] is False and reply["truncated"] is True
        assert "maxNewTokens" in reply["message"]
        assert len(client.docs.applied) == before
        assert client.docs.texts[uri] == DOC
    else:  # the model closed its program within 4 tokens: an ordinary apply
        _check_applied(client, uri, DOC, reply)
