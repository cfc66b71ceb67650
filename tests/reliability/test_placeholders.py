"""Issue 13 item 6: a lazy placeholder (``... existing code ...``) never deletes code.

The rule (engine.program.placeholders) on built and random cases, then end to end: the real server
(lazy fake engine) refuses cad.applyEdit and cad.applyPreview and sends no workspace/applyEdit,
and cad-apply --write leaves the file alone unless --allow-placeholders.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.program.placeholders import find_lazy_placeholders, looks_like_placeholder
from clients.batch import EXIT_REFUSED
from tests.lsp.raw_client import RawClient

from .placeholder_cases import DECORATIONS, PHRASES, PY_DOC, measure

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
CODE = st.sampled_from(["x = 1", "    return a + b", "if x:", "    y = f(x)", "}", "  let z = 2;", "print(x)", "",
                        "def g(a):", "for i in range(3):", "        total += i", "class A:", "# compute totals"])


def test_built_cases_all_caught_and_no_false_positive():
    figures = measure()
    print(f"\nplaceholders: {figures['caught']}/{figures['lazy_cases']} lazy caught, "
          f"{len(figures['false_positives'])}/{figures['honest_cases']} honest flagged")
    assert not figures["missed"], figures["missed"][:10]
    assert not figures["false_positives"]
    assert figures["lazy_cases"] >= 500


@settings(max_examples=800, **FAST)
@given(st.lists(CODE, min_size=3, max_size=20), st.data())
def test_random_block_replaced_by_a_placeholder_is_caught(lines, data):
    if not any(line.strip() for line in lines):
        return
    start = data.draw(st.integers(0, len(lines) - 1))
    end = data.draw(st.integers(start + 1, len(lines)))
    if not any(line.strip() for line in lines[start:end]):
        return
    leader = data.draw(st.sampled_from(["# ", "// ", "-- ", "/* "]))
    text = data.draw(st.sampled_from(DECORATIONS)).format(p=data.draw(st.sampled_from(PHRASES)))
    placeholder = " " * data.draw(st.integers(0, 8)) + leader + text + (" */" if leader == "/* " else "")
    new = lines[:start] + [placeholder] + lines[end:]
    found = find_lazy_placeholders("\n".join(lines), "\n".join(new))
    assert found and found[0].line == start + 1, (lines, new)


@settings(max_examples=800, **FAST)
@given(st.lists(CODE, min_size=1, max_size=20), st.lists(CODE, min_size=1, max_size=20))
def test_edits_made_of_code_lines_are_never_flagged(old, new):
    assert find_lazy_placeholders("\n".join(old), "\n".join(new)) == []


def _uri(tmp_path, name="lazy.py"):
    path = tmp_path / name
    path.write_text(PY_DOC)
    return path.as_uri()


@pytest.mark.parametrize("line", [
    "(* ... existing code ... *)", "(* rest of the module unchanged *)",   # OCaml, F#, Pascal
    "{/* ... existing code ... */}", "{/* rest unchanged */}",             # JSX
    "{- ... existing code ... -}", "<# ... existing code ... #>",          # Haskell, PowerShell
    '" ... existing code ...', '" rest of the mappings unchanged',         # Vim script
    "! ... existing code ...", ":: ... existing code ...", "@REM ... existing code ...",  # Fortran, batch
])
def test_comment_syntaxes_of_other_languages_are_placeholders(line):
    assert looks_like_placeholder(line) and looks_like_placeholder("    " + line)


@pytest.mark.parametrize("line", ['"rest of code"', '"""Return the rest of the lines."""', '"...",',
                                  "!unchanged &&", "(rest)", "x = 1  # ..."])
def test_strings_and_code_that_merely_start_like_a_comment_are_not(line):
    assert not looks_like_placeholder(line)


def test_server_refuses_lazy_edits_and_sends_nothing(tmp_path):
    client = RawClient([sys.executable, "-m", "tests.reliability.lazy_engines"])
    try:
        client.initialize(tmp_path)
        uri = _uri(tmp_path)
        client.open(uri, PY_DOC)
        reply = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "lazy:    # ... existing code ..."}))
        result = reply["result"]
        assert result["applied"] is False and "placeholder" in result["message"], result
        assert result["placeholders"][0]["text"] == "# ... existing code ..."
        assert not client.requests_from_server("workspace/applyEdit")
        shown = [m["params"]["message"] for m in client.messages if m.get("method") == "window/showMessage"]
        assert any("placeholder" in m for m in shown), shown
        preview = client.response(client.execute("cad.previewEdit", {"uri": uri, "instruction": "lazy:    // rest of the function"}))
        assert any("placeholder" in w for w in preview["result"]["warnings"]), preview
        applied = client.response(client.execute("cad.applyPreview", {"previewId": preview["result"]["previewId"]}))
        assert applied["result"]["applied"] is False and "placeholder" in applied["result"]["message"]
        assert not client.requests_from_server("workspace/applyEdit")
        ok = client.response(client.execute("cad.applyEdit", {"uri": uri, "instruction": "fix"}))
        assert ok["result"]["applied"] is True and len(client.requests_from_server("workspace/applyEdit")) == 1
    finally:
        client.close()


def test_cad_apply_refuses_lazy_results_unless_allowed(tmp_path):
    target = tmp_path / "lazy.py"
    target.write_text(PY_DOC)
    base = [sys.executable, "-m", "clients.batch", str(target), "-i", "lazy:    # ... rest unchanged", "--write",
            "--root", str(tmp_path), "--engine-factory", "tests.reliability.lazy_engines:lazy_backend", "-q"]
    env = {**os.environ, "PYTHONPATH": REPO}
    refused = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    assert refused.returncode == EXIT_REFUSED, refused.stderr
    assert "placeholder" in refused.stderr and "--allow-placeholders" in refused.stderr
    assert target.read_text() == PY_DOC
    allowed = subprocess.run([*base, "--allow-placeholders"], cwd=tmp_path, capture_output=True, text=True, env=env,
                             timeout=60)
    assert allowed.returncode == 0, allowed.stderr
    assert "# ... rest unchanged" in target.read_text()
