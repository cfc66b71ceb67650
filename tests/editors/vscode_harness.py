"""Builds the VS Code extension once per test session and runs tests/editors/vscode_client_driver.js.

Owns: copying clients/vscode to a temp dir (the checkout is not touched), `npm ci` from the
lockfile and `npm run compile`, skipping (with npm's output) only when npm is missing or the
registry is unreachable, and running one driver scenario, returning its JSON report.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VSCODE = REPO / "clients" / "vscode"
DRIVER = Path(__file__).with_name("vscode_client_driver.js")
NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH",
                  "network", "proxy", "request to https://registry")


def build_extension(dest: Path) -> Path:
    """npm ci + tsc + esbuild bundle in a copy of clients/vscode; returns the extension directory (or skips)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node/npm are not installed; cannot build or run the VS Code extension")
    work = dest / "vscode"
    shutil.copytree(VSCODE, work, ignore=shutil.ignore_patterns("node_modules", "out", "*.vsix"))
    ci = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=work, capture_output=True, text=True,
                        timeout=600)
    if ci.returncode != 0:
        output = ci.stdout + ci.stderr
        if any(marker in output for marker in NETWORK_ERRORS):
            print(output)
            pytest.skip(f"npm registry unreachable, extension not built: {output.strip()[-500:]}")
        pytest.fail(f"npm ci failed (exit {ci.returncode}):\n{output[-4000:]}")
    for script in ("compile", "bundle"):  # tsc (type check + out/), esbuild (dist/, what ships)
        build = subprocess.run([npm, "run", script], cwd=work, capture_output=True, text=True, timeout=300)
        assert build.returncode == 0, f"npm run {script} failed:\n{build.stdout[-4000:]}\n{build.stderr[-2000:]}"
    return work


class DriverFailed(AssertionError):
    pass


def run_driver(extension: Path, config: dict, timeout_s: float) -> dict:
    """Run one scenario; returns the report (raises DriverFailed with the output on failure)."""
    config = {"timeout_ms": int(timeout_s * 1000 * 0.8), **config}
    try:
        proc = subprocess.run([shutil.which("node"), str(DRIVER), str(extension), json.dumps(config)],
                              capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise DriverFailed(f"vscode driver {config['scenario']!r} did not finish in {timeout_s:.0f} s\n"
                           f"{(exc.stdout or '')[-3000:]}\n{(exc.stderr or '')[-3000:]}") from None
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT ")), None)
    if line is None:
        raise DriverFailed(f"vscode driver wrote no report (exit {proc.returncode})\n"
                           f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}")
    report = json.loads(line[len("REPORT "):])
    if not report.get("ok"):
        raise DriverFailed(f"vscode scenario {config['scenario']!r} failed: {report.get('error')}\n"
                           f"steps: {report.get('steps')}\nmessages: {report.get('messages')}\n"
                           f"output channel:\n{json.dumps(report.get('output'), indent=1)[-4000:]}\n"
                           f"stderr:\n{proc.stderr[-2000:]}")
    return report
