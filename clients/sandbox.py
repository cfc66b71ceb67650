"""A sandbox for model-written code (cad-bench pass@1): what the candidate can reach, and for how long.

Why: ``cad-bench`` runs code a model wrote. A wrong edit can delete files, fork without end,
allocate all memory, open sockets or loop forever; none of that may harm the machine or the
benchmark. :func:`run_sandboxed` runs one command in a fresh process with

* a **temp working directory** (``HOME``/``TMPDIR`` too) and a **clean environment** (no
  tokens, no proxies, no ``PYTHONPATH``: only ``PATH`` and a UTF-8 locale);
* **rlimits**: CPU seconds, address space, file size, open files, processes, no core dumps;
* a **wall timeout**, after which its session and every process of its uid are killed;
* **no network**: a fresh network namespace (``unshare(CLONE_NEWNET)``; as root directly, else
  inside a user namespace) that has only a down loopback;
* when run as **root**, a **throw-away uid** (no such user; a random one per run) with no
  groups: the candidate cannot delete or change anyone's files outside its directory, the
  process limit counts only its own processes, and the cleanup kills exactly them.

Where the kernel refuses a namespace or the caller is not root, the sandbox falls back (rlimits,
timeout, temp dir, clean env still apply) and :attr:`SandboxResult.isolation` says which
protections were in force, so a report can say so.
"""
from __future__ import annotations

import ctypes
import os
import resource
import secrets
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Limits", "SandboxResult", "run_sandboxed", "capabilities", "world_executable"]

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
UID_BASE = 0x7E000000  # far above real users; a random uid per run is added to it
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 10
    memory_bytes: int = 1 << 30
    file_bytes: int = 16 << 20
    processes: int = 64
    open_files: int = 256


@dataclass
class SandboxResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    output: str
    isolation: list[str] = field(default_factory=list)


_CAPS: dict | None = None


def _unshare(flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _child_setup(uid: int | None, limits: Limits, netns: int, nproc: int):
    def setup() -> None:  # runs in the child between fork and exec
        os.setsid()
        if netns:
            _unshare(netns)
        for which, value in ((resource.RLIMIT_CORE, 0), (resource.RLIMIT_AS, limits.memory_bytes),
                             (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_NOFILE, limits.open_files),
                             (resource.RLIMIT_NPROC, nproc)):
            resource.setrlimit(which, (value, value))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
    return setup


def capabilities() -> dict:
    """Which protections this machine allows (probed once): ``netns`` flags and ``uid`` isolation."""
    global _CAPS
    if _CAPS is None:
        root = os.geteuid() == 0
        netns = 0
        for flags in ((CLONE_NEWNET,) if root else ()) + (CLONE_NEWUSER | CLONE_NEWNET,):
            try:
                subprocess.run(["true"], preexec_fn=lambda f=flags: _unshare(f), check=True, timeout=10,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except (OSError, subprocess.SubprocessError):
                continue
            netns = flags
            break
        _CAPS = {"netns": netns, "uid": root}
    return _CAPS


def world_executable(path: str) -> bool:
    """Can a uid with no groups run ``path``? (o+x on every directory above it, o+rx on the file.)"""
    real = Path(os.path.realpath(path))
    try:
        if real.stat().st_mode & 0o005 != 0o005:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in real.parents)
    except OSError:
        return False


def _uid_processes(uid: int, low: int | None = None, high: int | None = None) -> list[int]:
    """Live (not zombie) processes whose real uid is ``uid`` (or in ``[low, high)``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
            real = int(fields["Uid"].split()[0])
        except (OSError, ValueError, KeyError):
            continue
        if (real == uid if low is None else low <= real < high) and not fields.get("State", "").strip().startswith("Z"):
            pids.append(int(entry.name))
    return pids


def _kill_uid(uid: int) -> None:
    """Kill every process of the throw-away uid (a fork bomb may have left its session)."""
    for _ in range(20):
        if not _uid_processes(uid):
            return
        subprocess.run(["kill", "-9", "-1"], user=uid, group=uid, extra_groups=[], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10)
        time.sleep(0.05)


def _own_process_count() -> int:
    return len(_uid_processes(os.getuid()))


def run_sandboxed(argv: list[str], workdir: Path, *, timeout_s: float = 15.0, limits: Limits = Limits(),
                  env: dict | None = None, output_limit: int = 4000) -> SandboxResult:
    """Run ``argv`` in ``workdir`` (which the caller created and fills) under the sandbox."""
    caps = capabilities()
    # the throw-away uid must be able to run the interpreter (a venv under /root is not reachable)
    uid = UID_BASE + secrets.randbelow(1 << 20) if caps["uid"] and world_executable(argv[0]) else None
    isolation = ["temp-cwd", "clean-env", "rlimits", "wall-timeout"]
    if caps["netns"]:
        isolation.append("no-network")
    if uid is not None:
        isolation.append("throwaway-uid")
        for path in [workdir, *Path(workdir).rglob("*")]:
            os.chown(path, uid, uid)
    nproc = limits.processes if uid is not None else _own_process_count() + limits.processes
    clean = {"PATH": CLEAN_PATH, "HOME": str(workdir), "TMPDIR": str(workdir), "LANG": "C.UTF-8",
             "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    start = time.monotonic()
    timed_out = False
    with tempfile.TemporaryFile() as out:  # outside workdir; its size is capped by RLIMIT_FSIZE
        proc = subprocess.Popen(argv, cwd=workdir, env=clean, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT,
                                preexec_fn=_child_setup(uid, limits, caps["netns"], nproc))
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            if uid is not None:
                _kill_uid(uid)
        seconds = time.monotonic() - start
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - output_limit))
        text = out.read().decode("utf-8", errors="replace")
    return SandboxResult(proc.returncode, timed_out, seconds, text, isolation)
