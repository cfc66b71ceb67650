"""A model edit that changes nothing says so, and what to try instead, over the real server's stdio."""
from __future__ import annotations

from .raw_client import RawClient

DOC = "".join(f"line_{i} = {i}\n" for i in range(10))


def test_unchanged_model_edit_says_what_to_try(tmp_path):
    client = RawClient()
    try:
        client.initialize(tmp_path)
        uri = (tmp_path / "doc.py").as_uri()
        client.open(uri, DOC)
        result = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "nothing"}))["result"]
        assert result["applied"] and result["edits"] == 0
        assert result["message"].startswith("no change: the model's edit reproduces the document")
        assert "diff or snippet" in result["message"] and "larger model" in result["message"]
        changed = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "add a line"}))["result"]
        assert changed["applied"] and "no change" not in changed["message"]
    finally:
        client.close()
