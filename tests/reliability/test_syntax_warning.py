"""An edit that breaks the document's syntax is applied (the user may have asked for it) but never silently.

End to end with the real server and cad-apply (the fake engines of lazy_engines: an instruction
``lazy:<line>`` replaces the edited body with ``<line>``, here a line that does not compile).
"""
from __future__ import annotations

import os
import subprocess
import sys

from tests.lsp.raw_client import RawClient

from .placeholder_cases import PY_DOC

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BROKEN = "lazy:    return (total"


def test_server_applies_a_breaking_edit_and_says_where_it_breaks(tmp_path):
    client = RawClient([sys.executable, "-m", "tests.reliability.lazy_engines"])
    try:
        client.initialize(tmp_path)
        uri = (tmp_path / "broken.py").as_uri()
        client.open(uri, PY_DOC)
        result = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": BROKEN}))["result"]
        assert result["applied"] is True, result
        assert result["syntax"]["check"] == "python" and result["syntax"]["line"] == 2, result
        assert any("Python syntax error at line 2" in w for w in result["warnings"]), result
        shown = [m["params"]["message"] for m in client.messages if m.get("method") == "window/showMessage"]
        assert any("syntax error" in m for m in shown), shown
        fine = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix"}))["result"]
        assert "syntax" not in fine and not fine["warnings"], fine
        preview = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": BROKEN}))["result"]
        assert preview["syntax"]["check"] == "python", preview
        before = len(client.messages)
        applied = client.response(client.execute("cad.applyPreview", {"previewId": preview["previewId"]}))["result"]
        assert applied["applied"] is True and any("syntax error" in w for w in applied["warnings"]), applied
        shown = [m["params"]["message"] for m in client.messages[before:] if m.get("method") == "window/showMessage"]
        assert any("syntax error" in m for m in shown), shown   # said again when the preview is applied
    finally:
        client.close()


def test_cad_apply_writes_a_breaking_edit_with_a_warning(tmp_path):
    target = tmp_path / "broken.py"
    target.write_text(PY_DOC)
    cmd = [sys.executable, "-m", "clients.batch", str(target), "-i", BROKEN, "--write", "--root", str(tmp_path),
           "--engine-factory", "tests.reliability.lazy_engines:lazy_backend", "-q"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": REPO},
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "warning" in done.stderr and "Python syntax error at line 2" in done.stderr, done.stderr
    assert "return (total" in target.read_text()
