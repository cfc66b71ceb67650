"""Runs tests/editors/tui_driver.lua: a real Neovim TUI (in a terminal buffer of a headless
controller Neovim) with the cad plugin loaded from tests/editors/tui_child_init.lua.

Owns the two environments (controller and child), the status file the child writes, and
reading back the report: screen frames, hit-enter prompts met, plugin events.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from nvim_harness import PLUGIN_DIR, find_nvim

HERE = Path(__file__).parent
DRIVER = HERE / "tui_driver.lua"
CHILD_INIT = HERE / "tui_child_init.lua"


def keys(text: str) -> dict:
    return {"keys": text}


def run_tui(tmp_path: Path, file: Path, server_cmd: list[str], steps: list[dict], *, timeout_s: float,
            settings: dict | None = None, env: dict | None = None, nvim: Path | None = None,
            columns: int = 100, lines: int = 30) -> dict:
    binary, nvim_env = find_nvim()
    child = nvim or binary
    status_file = tmp_path / "tui-status"
    out = tmp_path / "tui-report.json"
    xdg = tmp_path / "xdg"
    for sub in ("state", "config", "data"):
        (xdg / sub).mkdir(parents=True, exist_ok=True)
    child_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("NVIM")},
        **(nvim_env if child == binary else {"VIMRUNTIME": ""}),
        **(env or {}),
        "TERM": "xterm-256color",
        "XDG_STATE_HOME": str(xdg / "state"), "XDG_CONFIG_HOME": str(xdg / "config"), "XDG_DATA_HOME": str(xdg / "data"),
        "CAD_TUI_CHILD": json.dumps({"plugin_dir": str(PLUGIN_DIR), "cmd": server_cmd, "settings": settings or {},
                                     "status_file": str(status_file)}),
    }
    if not child_env.get("VIMRUNTIME"):
        child_env.pop("VIMRUNTIME", None)
    config = {
        "cmd": [str(child), "-n", "-i", "NONE", "-u", str(CHILD_INIT), str(file)],
        "cwd": str(file.parent), "env": child_env, "columns": columns, "lines": lines,
        "timeout_ms": int(timeout_s * 1000 * 0.8), "status_file": str(status_file), "steps": steps,
    }
    run_env = {**os.environ, **nvim_env, "CAD_TUI_CONFIG": json.dumps(config), "CAD_TUI_OUT": str(out),
               "XDG_STATE_HOME": str(xdg / "state"), "XDG_CONFIG_HOME": str(xdg / "config")}
    proc = subprocess.run([str(binary), "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {DRIVER}"],
                          env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=timeout_s,
                          stdin=subprocess.DEVNULL)
    if not out.exists():
        raise AssertionError(f"tui driver wrote no report (exit {proc.returncode})\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    report = json.loads(out.read_text())
    events_file = Path(str(status_file) + ".events")
    report["events"] = [json.loads(x) for x in events_file.read_text().splitlines()] if events_file.exists() else []
    return report


def show(report: dict) -> str:
    """Frames and hit-enter screens, for assertion messages."""
    parts = [f"error: {report.get('error')}", f"hit-enter prompts: {report.get('hit_enter')}"]
    for frame in report.get("hit_enter_frames", [])[:2]:
        parts.append("--- screen at a hit-enter prompt ---\n" + "\n".join(frame))
    parts.append("--- final screen ---\n" + "\n".join(report.get("final_screen", [])))
    parts.append(f"--- status ---\n{report.get('status')}\n--- events ---\n{report.get('events')}")
    return "\n".join(parts)
