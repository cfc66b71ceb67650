"""`cad-lsp` command line as editors launch it: `--stdio` (what vscode-languageclient appends),
`--clientProcessId=N`, `--version`, `--log-file`, and no progress bars on stderr (editors log
every stderr line of a language server as an error).

Runs the installed `cad-lsp` entry point (the venv's console script) as a child process and
speaks LSP to it over real pipes.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from importlib.metadata import version as dist_version
from pathlib import Path

import pytest

from clients.lsp_session import LspSession

CAD_LSP = Path(sys.executable).with_name("cad-lsp")


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(stream) -> dict:
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("server closed stdout")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(stream.read(length))


def _handshake(argv: list[str], tmp_path: Path) -> tuple[dict, str, float]:
    """initialize → shutdown → exit; returns the initialize result, stderr and the
    spawn-to-initialize-result time."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(CAD_LSP), *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}}}))
        proc.stdin.flush()
        reply = _read_message(proc.stdout)
        elapsed = time.perf_counter() - t0
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.flush()
        assert _read_message(proc.stdout).get("id") == 2
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return reply, proc.stderr.read().decode(errors="replace"), elapsed


@pytest.fixture(autouse=True)
def _needs_entry_point():
    if not CAD_LSP.exists():
        pytest.skip(f"{CAD_LSP} is not installed (run `make setup`)")


def test_version_prints_the_installed_version():
    out = subprocess.run([str(CAD_LSP), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"cad-lsp {dist_version('copy-as-decode')}"


@pytest.mark.parametrize("argv", [[], ["--stdio"], ["--stdio", f"--clientProcessId={os.getpid()}"]],
                         ids=["default", "stdio", "vscode-languageclient"])
def test_stdio_transport_initializes(tmp_path, argv):
    reply, stderr, elapsed = _handshake(argv, tmp_path)
    result = reply.get("result")
    assert result, f"no initialize result: {reply}\nstderr:\n{stderr}"
    assert result["serverInfo"]["name"] == "cad-lsp"
    assert "cad.applyEdit" in result["capabilities"]["executeCommandProvider"]["commands"]
    print(f"spawn -> initialize result: {elapsed * 1000:.0f} ms")


def test_unsupported_transports_are_refused_with_a_reason(tmp_path):
    for argv in (["--node-ipc"], ["--pipe=/tmp/x"], ["--stdio", "--tcp", "127.0.0.1:1"]):
        out = subprocess.run([str(CAD_LSP), *argv], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, (argv, out)
        assert "stdio" in out.stderr, out.stderr


def test_log_file_receives_the_log_and_stderr_stays_empty(tmp_path):
    log = tmp_path / "logs" / "cad.log"
    log.parent.mkdir()
    _, stderr, _ = _handshake(["--stdio", "--log-level", "INFO", "--log-file", str(log)], tmp_path)
    assert stderr == ""
    text = log.read_text()
    assert f"cad-lsp {dist_version('copy-as-decode')} starting (stdio)" in text, text


def test_unwritable_log_file_is_a_clear_error(tmp_path):
    out = subprocess.run([str(CAD_LSP), "--log-file", str(tmp_path / "missing" / "dir" / "x.log")],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2
    assert "cannot write the log file" in out.stderr


@pytest.mark.real_model
def test_model_loading_writes_no_progress_bars_to_stderr(tmp_path):
    """A fresh cache forces the GGUF dequantization (the tqdm-heavy path) inside the server."""
    lines: list[str] = []

    async def scenario() -> dict:
        env = {**os.environ, "CAD_CACHE_DIR": str(tmp_path / "cache")}
        for key in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS"):
            env.pop(key, None)
        session = LspSession([str(CAD_LSP), "--stdio"], env=env, on_stderr=lines.append, root_path=tmp_path)
        await session.start()
        try:
            uri = (tmp_path / "x.py").as_uri()
            session.open(uri, "def add(a, b):\n    return a - b\n", "python")
            result, _ = await session.execute("cad.previewEdit", {"uri": uri, "instruction": "Fix add.",
                                                                  "maxNewTokens": 4}, timeout_s=600)
            return result
        finally:
            await session.stop()

    result = asyncio.run(scenario())
    assert "diff" in result, result
    bars = [line for line in lines if "%|" in line or "\r" in line or "it/s" in line]
    assert bars == [], "progress bars reached the server's stderr:\n" + "\n".join(bars[:5])
    library = [line for line in lines if "py.warnings" in line or "Warning:" in line]
    assert library == [], "library warnings reached the server's stderr (editors show them as errors):\n" + \
        "\n".join(library[:5])
    assert any(Path(tmp_path / "cache").rglob("*")), "the server did not use the fresh cache"


def test_library_warnings_stay_out_of_stderr_unless_info():
    """A library's FutureWarning (transformers emits one while applying the adapter) is not an
    error for the user: logged at INFO, so the default log level keeps stderr clean."""
    code = ("import sys, warnings; from cad_lsp.__main__ import _configure_logging, parse_args; "
            "_configure_logging(parse_args(sys.argv[1:])); "
            "warnings.warn('x is deprecated', FutureWarning); import logging; logging.getLogger('cad').warning('kept')")
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    verbose = subprocess.run([sys.executable, "-c", code, "--log-level", "INFO"], capture_output=True, text=True,
                             timeout=60)
    assert "FutureWarning" not in quiet.stderr and "WARNING cad: kept" in quiet.stderr, quiet.stderr
    assert "INFO py.warnings" in verbose.stderr and "FutureWarning" in verbose.stderr, verbose.stderr


def test_min_confidence_outside_zero_to_one_is_a_clear_error():
    out = subprocess.run([str(CAD_LSP), "--min-confidence", "40"], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 2
    assert "minConfidence=40.0 must be a number between 0 and 1" in out.stderr, out.stderr
