"""Start vLLM (``make setup-vllm``'s venv, ``.venv-vllm``) on loopback with the in-process weights.

``start_vllm_server(port=0)`` runs ``<venv>/bin/vllm serve <merged dir>`` (``engine.remote.export``:
the default model with its adapter merged, fp32) on 127.0.0.1 with ``--enable-prefix-caching``,
``--enable-prompt-tokens-details`` (usage then reports the prompt tokens served from the cache: a
warm edit's ``prompt_reused``) and ``VLLM_CPU_KVCACHE_SPACE=2``, served as ``SERVED_NAME``; waits
(bounded, ``timeout``) for ``/health`` and returns a ``ServedProcess`` (``spec`` is the model spec
for ``EditEngine``). Start-up takes 2-3.5 min on 2 cores (torch.compile warm-up). ``make serve`` runs the same command in the foreground.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from engine.remote.errors import RemoteConnectionError
from engine.remote.llama_server import SERVED_NAME, LlamaServer as ServedProcess, free_port, wait_until_ready

VLLM_VENV = Path(__file__).resolve().parents[2] / ".venv-vllm"
START_TIMEOUT_S = 900.0


def vllm_binary() -> Path:
    exe = VLLM_VENV / "bin" / "vllm"
    if not exe.is_file():
        raise RemoteConnectionError(f"vLLM is not installed ({exe} missing): run `make setup-vllm`")
    return exe


def start_vllm_server(*, port: int = 0, timeout: float = START_TIMEOUT_S, extra: tuple[str, ...] = ()) -> ServedProcess:
    from engine.remote.export import merged_model_dir

    model_dir = merged_model_dir()
    port = port or free_port()
    log = Path(tempfile.mkstemp(prefix="cad-vllm-", suffix=".log")[1])
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"))
    cmd = [str(vllm_binary()), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
           "--served-model-name", SERVED_NAME, "--dtype", "float32", "--max-model-len", "8192",
           "--enable-prefix-caching", "--enable-prompt-tokens-details", *extra]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    return wait_until_ready(ServedProcess(proc, port, log), "/v1/models", timeout, "vllm serve", poll_s=1.0)
