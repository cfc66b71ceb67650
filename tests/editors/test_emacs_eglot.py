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

import pytest

from tests.editors.emacs_harness import (EGLOT_DRIVER, has_emacs_package, instruction_comment_edit,
                                         prompt_action_error, real_model_edit)

pytestmark = pytest.mark.skipif(not has_emacs_package("eglot"),
                                reason="Emacs with eglot is not installed (apt-get install emacs-nox elpa-eglot)")


def test_instruction_comment_edit_applies_through_plain_eglot(tmp_path):
    got = instruction_comment_edit(tmp_path, EGLOT_DRIVER)
    assert got["bounds"][0] < got["bounds"][1]   # eglot asked with the word at point: a one-line selection


def test_the_prompt_action_says_how_to_edit_without_a_plugin(tmp_path):
    prompt_action_error(tmp_path, EGLOT_DRIVER)


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_edit_through_plain_eglot(tmp_path):
    real_model_edit(tmp_path, EGLOT_DRIVER)
