"""The LSP server over real stdio configured with a URL model: edits go through a REAL llama.cpp server."""
from __future__ import annotations

import asyncio
import json

import pytest
import pytest_asyncio

from engine.api import EditEngine, EditRequest
from engine.program.grammar import parse, serialize
from engine.program.resolver import resolve
from evaluation.corpus import data_dir
from tests.lsp.lsp_client import execute, new_token, open_doc, start_client

pytestmark = [pytest.mark.real_model, pytest.mark.asyncio(loop_scope="module")]


def _humaneval():
    row = json.loads((data_dir() / "python.jsonl").read_text().splitlines()[0])
    return row["declaration"] + row["buggy_solution"], "Fix bugs in " + row["entry_point"] + "."


DOC, INSTRUCTION = _humaneval()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(llama_server):
    client = await start_client("--preload", init_options={"cad": {"model": llama_server.spec, "strategy": "cad"}})
    yield client
    await client.shutdown_session()


async def test_apply_edit_through_the_server(client, llama_server):
    uri = "file:///tmp/cad-remote/he0.py"
    open_doc(client, uri, DOC)
    before = len(client.docs.applied)
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": INSTRUCTION},
                                           token=new_token()), 600)
    program = parse(reply["program"])
    expected = resolve(program, DOC, "clipped").text
    # the same weights in process write the same program (greedy, f32 both sides)
    local = EditEngine("default", "cpu").edit(EditRequest(DOC, INSTRUCTION, strategy="cad"))
    assert serialize(local.program) == reply["program"]
    if not reply["edits"]:
        assert expected == DOC
        return
    assert reply["applied"] is True, reply["message"]
    assert client.docs.texts[uri] == expected
    change = client.docs.applied[before].edit.document_changes[0]
    assert change.text_document.version == 1


async def test_truncated_program_is_not_applied(client):
    uri = "file:///tmp/cad-remote/he0-short.py"
    open_doc(client, uri, DOC)
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": INSTRUCTION,
                                                                     "maxNewTokens": 6}), 600)
    assert reply["applied"] is False and reply.get("truncated") is True
    assert client.docs.texts[uri] == DOC
