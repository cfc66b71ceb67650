"""The real server applies a pasted diff without a model: none is loaded for it (here the configured
one cannot even load), and a diff longer than any model's context is no "instruction too long"."""
from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from .lsp_client import execute, open_doc, start_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOC = "".join(f"value_{i} = {i}\n" for i in range(1, 4001))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client():
    client = await start_client("--device", "cpu", init_options={"cad": {"model": "/nonexistent/model/dir"}})
    yield client
    await client.shutdown_session()


async def test_a_long_pasted_diff_applies_without_loading_the_model(client):
    uri = "file:///tmp/cad-pasted/values.py"
    open_doc(client, uri, DOC)
    new = DOC.replace("value_7 = 7\n", "value_7 = 70\n").replace("value_3999 = 3999\n", "value_3999 = 0\n")
    hunks = "".join(f"@@ -{n - 1},3 +{n - 1},3 @@\n value_{n - 1} = {n - 1}\n-value_{n} = {n}\n+value_{n} = {v}\n"
                    f" value_{n + 1} = {n + 1}\n" for n, v in ((7, 70), (3999, 0)))
    noise = "".join(f"# reviewer note {k}: looks fine\n" for k in range(6000))   # ~60k tokens of prose
    instruction = f"{noise}\n```diff\n--- a/values.py\n+++ b/values.py\n{hunks}```"
    reply = await asyncio.wait_for(execute(client, "cad.applyEdit", {"uri": uri, "instruction": instruction}), 120)
    assert reply["applied"] is True and reply["stats"]["planner"] == "patch", reply
    assert client.docs.texts[uri] == new
