"""An editor with no Copy-as-Decode plugin: headless Emacs with plain eglot, the server as a generic LSP server.

What such an editor can do is what any LSP client can: list the code actions, run one, and apply the
versioned ``workspace/applyEdit`` the server sends. The instruction comes from an instruction
comment (``# cad: …``), which the edit consumes; the "Apply edit instruction…" action, which needs
a plugin to prompt, answers with an error that says how to use comments instead. Eglot counts
columns in UTF-16, so the document carries characters outside the BMP.

Needs ``emacs`` and Debian's ``elpa-eglot`` (``apt-get install emacs-nox elpa-eglot``); skipped
when they are missing. One test runs the real default model.
"""
from __future__ import annotations

import sys

import pytest

from tests.editors.emacs_harness import DOC, EGLOT_DRIVER, REPO, has_emacs_package
from tests.editors.emacs_harness import run_emacs as run_harness

pytestmark = pytest.mark.skipif(not has_emacs_package("eglot"),
                                reason="Emacs with eglot is not installed (apt-get install emacs-nox elpa-eglot)")


def run_emacs(tmp_path, text, server, pick, timeout: float = 300) -> dict:
    return run_harness(tmp_path, text, server, pick, driver=EGLOT_DRIVER, timeout=timeout)


def test_instruction_comment_edit_applies_through_plain_eglot(tmp_path):
    got = run_emacs(tmp_path, DOC, [sys.executable, "-m", "tests.lsp.fake_engine_server"], "Apply: add a marker")
    assert got["error"] is None, got
    assert got["bounds"][0] < got["bounds"][1]   # eglot asked with the word at point: a one-line selection
    assert "Apply edit instruction…" in got["titles"] and "Apply: add a marker 🎯" in got["titles"]
    assert got["result"]["applied"] is True, got["result"]
    lines = DOC.split("\n")
    expected = "\n".join([lines[0], *lines[2:4], "# edited: add a marker 🎯", ""])
    assert got["text"] == expected          # the comment consumed, copied lines (with emoji) byte-identical


def test_the_prompt_action_says_how_to_edit_without_a_plugin(tmp_path):
    got = run_emacs(tmp_path, DOC, [sys.executable, "-m", "tests.lsp.fake_engine_server"], "Apply edit instruction")
    assert got["error"] is not None and "needs an instruction" in got["error"] and "cad: " in got["error"], got
    assert got["text"] == DOC


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_edit_through_plain_eglot(tmp_path):
    from engine.program.grammar import parse
    from engine.program.resolver import resolve

    doc = (REPO / "examples" / "buggy_stats.py").read_text(encoding="utf-8")
    doc = doc.replace("def mean(values):\n", "def mean(values):\n    # cad: Fix the off-by-one bug in mean.\n")
    server = [sys.executable, "-m", "cad_lsp", "--preload", "--device", "cpu"]
    got = run_emacs(tmp_path, doc, server, "Apply: Fix the off-by-one", timeout=600)
    assert got["error"] is None, got
    reply = got["result"]
    assert reply["program"] and "stats" in reply, reply
    expected = resolve(parse(reply["program"]), doc, "clipped").text
    assert got["text"] == (expected if reply["applied"] else doc), reply
