"""Fixtures for the editor-client tests: the VS Code extension, built once per session."""
from __future__ import annotations

import pytest

from vscode_harness import build_extension


@pytest.fixture(scope="session")
def vscode_extension(tmp_path_factory):
    """clients/vscode built from its lockfile in a temp copy (skips when npm cannot reach the registry)."""
    return build_extension(tmp_path_factory.mktemp("vscode-build"))
