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

import pytest

from tests.editors.emacs_harness import (LSP_MODE_DRIVER, has_emacs_package, instruction_comment_edit,
                                         prompt_action_error, real_model_edit)

pytestmark = pytest.mark.skipif(not has_emacs_package("lsp-mode"),
                                reason="Emacs with lsp-mode is not installed (apt-get install emacs-nox elpa-lsp-mode)")


def test_instruction_comment_edit_applies_through_lsp_mode(tmp_path):
    instruction_comment_edit(tmp_path, LSP_MODE_DRIVER)


def test_the_prompt_action_says_how_to_edit_without_a_plugin(tmp_path):
    prompt_action_error(tmp_path, LSP_MODE_DRIVER)


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_edit_through_lsp_mode(tmp_path):
    real_model_edit(tmp_path, LSP_MODE_DRIVER)
