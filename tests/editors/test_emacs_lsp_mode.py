"""A second editor with no Copy-as-Decode plugin: headless Emacs with lsp-mode, the server registered
as a generic stdio client.

lsp-mode differs from eglot where it matters here: it asks for code actions with an empty range at
point, runs the command with a synchronous ``workspace/executeCommand`` while answering the server's
``workspace/applyEdit``, and numbers document versions from 0. The document carries characters
outside the BMP on copied lines.

Needs ``emacs`` and Debian's ``elpa-lsp-mode`` (``apt-get install emacs-nox elpa-lsp-mode``); skipped
when they are missing. One test runs the real default model.
"""
from __future__ import annotations

import sys

import pytest

from tests.editors.emacs_harness import DOC, REPO, has_emacs_package
from tests.editors.emacs_harness import LSP_MODE_DRIVER as DRIVER
from tests.editors.emacs_harness import run_emacs

pytestmark = pytest.mark.skipif(not has_emacs_package("lsp-mode"),
                                reason="Emacs with lsp-mode is not installed (apt-get install emacs-nox elpa-lsp-mode)")


def test_instruction_comment_edit_applies_through_lsp_mode(tmp_path):
    got = run_emacs(tmp_path, DOC, [sys.executable, "-m", "tests.lsp.fake_engine_server"], "Apply: add a marker",
                    driver=DRIVER)
    assert got["error"] is None, got
    assert "Apply edit instruction…" in got["titles"] and "Apply: add a marker 🎯" in got["titles"]
    assert got["result"]["applied"] is True, got["result"]
    lines = DOC.split("\n")
    expected = "\n".join([lines[0], *lines[2:4], "# edited: add a marker 🎯", ""])
    assert got["text"] == expected          # the comment consumed, copied lines (with emoji) byte-identical


def test_the_prompt_action_says_how_to_edit_without_a_plugin(tmp_path):
    got = run_emacs(tmp_path, DOC, [sys.executable, "-m", "tests.lsp.fake_engine_server"], "Apply edit instruction",
                    driver=DRIVER)
    assert got["error"] is not None and "needs an instruction" in got["error"] and "cad: " in got["error"], got
    assert got["text"] == DOC


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_edit_through_lsp_mode(tmp_path):
    from engine.program.grammar import parse
    from engine.program.resolver import resolve

    doc = (REPO / "examples" / "buggy_stats.py").read_text(encoding="utf-8")
    doc = doc.replace("def mean(values):\n", "def mean(values):\n    # cad: Fix the off-by-one bug in mean.\n")
    server = [sys.executable, "-m", "cad_lsp", "--preload", "--device", "cpu"]
    got = run_emacs(tmp_path, doc, server, "Apply: Fix the off-by-one", timeout=600, driver=DRIVER)
    assert got["error"] is None, got
    reply = got["result"]
    assert reply["program"] and "stats" in reply, reply
    expected = resolve(parse(reply["program"]), doc, "clipped").text
    assert got["text"] == (expected if reply["applied"] else doc), reply
