"""Malicious candidates for cad-bench's test runner (clients.testrun → clients.sandbox).

Each probe is model-written code that tries one kind of harm; :func:`run_probes` runs them all
through ``clients.testrun.run_tests`` (the path cad-bench uses) and counts escapes: harm that
was observed outside the sandbox (a canary file deleted or changed, a loopback connection
accepted, a secret from the environment printed, a process left running, a wall time far past
the timeout). Shared by tests/reliability/test_sandbox.py and benchmarks/reliability.py.
"""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from clients.sandbox import UID_BASE, _uid_processes
from clients.testrun import run_tests

SECRET = "cad-secret-do-not-leak-4711"
TIMEOUT_S = 3.0


@dataclass
class ProbeFigures:
    probes: int = 0
    escapes: int = 0
    isolation: list = field(default_factory=list)
    details: dict = field(default_factory=dict)


def _sandbox_processes() -> list[int]:
    return _uid_processes(-1, UID_BASE, UID_BASE + (1 << 20))


def probes(canary: Path, port: int) -> dict[str, str]:
    return {
        "delete-files": f"import os, shutil\nfor p in [{str(canary)!r}, {str(canary.parent)!r}]:\n"
                        "    try:\n        os.remove(p)\n    except Exception as e: print('rm', e)\n"
                        "    try:\n        shutil.rmtree(p)\n    except Exception as e: print('rmtree', e)\n"
                        f"open({str(canary)!r}, 'w').write('owned')\n",
        "fork-bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        "allocate": "chunks = []\nwhile True:\n    chunks.append(bytearray(256 << 20))\n",
        "socket": "import socket\nfor host in ('127.0.0.1', '1.1.1.1', '::1'):\n    try:\n"
                  f"        socket.create_connection((host, {port}), timeout=1); print('CONNECTED', host)\n"
                  "    except OSError as e: print('refused', host, e)\n",
        "infinite-loop": "while True:\n    pass\n",
        "big-file": "with open('big.bin', 'wb') as fh:\n    for _ in range(64):\n        fh.write(b'x' * (4 << 20))\n",
        "environment": "import os\nprint(dict(os.environ))\n",
        "kill-parent": "import os, signal\nfor pid in (os.getppid(), 1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n"
                       "    except OSError as e: print('kill', e)\n",
    }


def run_probes(workdir: Path) -> ProbeFigures:
    figures = ProbeFigures()
    canary_dir = workdir / "canary"
    canary_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chmod(workdir, 0o755)  # reachable by any uid: the deletion probe must be able to try
    canary = canary_dir / "precious.py"
    canary.write_text("precious = True\n")
    os.chmod(canary, 0o644)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    os.environ["CAD_TEST_SECRET"] = SECRET
    try:
        for name, code in probes(canary, port).items():
            t0 = time.perf_counter()
            outcome = run_tests("python", code, "def check(f):\n    pass\n", "print", timeout_s=TIMEOUT_S)
            wall = time.perf_counter() - t0
            figures.probes += 1
            figures.isolation = outcome.isolation
            harm = []
            if not canary.exists() or canary.read_text() != "precious = True\n":
                harm.append("canary deleted or changed")
                canary_dir.mkdir(exist_ok=True)
                canary.write_text("precious = True\n")
            try:
                conn, _ = listener.accept()
                conn.close()
                harm.append("loopback connection accepted")
            except BlockingIOError:
                pass
            if "CONNECTED" in outcome.output_tail:
                harm.append("network reachable")
            if SECRET in outcome.output_tail:
                harm.append("environment secret leaked")
            left = _sandbox_processes()
            if left:
                harm.append(f"{len(left)} sandbox processes left running")
            if wall > TIMEOUT_S + 5:
                harm.append(f"took {wall:.1f} s (timeout {TIMEOUT_S} s)")
            figures.escapes += bool(harm)
            figures.details[name] = {"passed": outcome.passed, "timed_out": outcome.timed_out,
                                     "returncode": outcome.returncode, "seconds": round(wall, 2), "harm": harm,
                                     "output": outcome.output_tail[-160:]}
    finally:
        os.environ.pop("CAD_TEST_SECRET", None)
        listener.close()
    return figures
