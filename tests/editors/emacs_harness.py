"""Headless Emacs driving the real (or a scripted) server as a plugin-less LSP client: eglot or lsp-mode.

``run_emacs`` writes the document into a fresh project, runs ``emacs --batch`` with a driver
(``eglot_driver.el``, ``lsp_mode_driver.el``) that opens it, lists the code actions on the
instruction comment, runs the one whose title starts with ``pick`` and writes what happened as JSON.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ELPA = Path("/usr/share/emacs/site-lisp/elpa")
EGLOT_DRIVER = Path(__file__).with_name("eglot_driver.el")
LSP_MODE_DRIVER = Path(__file__).with_name("lsp_mode_driver.el")
DOC = ('"""Stats 📊 helpers: ünïcode on a copied line."""\n'
       "# cad: add a marker 🎯\n"
       "def mean(values):\n"
       "    return sum(values) / len(values)  # 😀 after the code\n")


def has_emacs_package(name: str) -> bool:
    """Whether ``emacs`` and Debian's ``elpa-<name>`` are installed."""
    return shutil.which("emacs") is not None and any(ELPA.glob(f"{name}-*"))


def run_emacs(tmp_path: Path, text: str, server: list[str], pick: str, *, driver: Path,
              timeout: float = 300) -> dict:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    path = project / "stats.py"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.json"
    env = dict(os.environ, CAD_FILE=str(path), CAD_SERVER=json.dumps(server), CAD_OUT=str(out), CAD_PICK=pick,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), HOME=str(tmp_path))
    done = subprocess.run(["emacs", "--batch", "-Q", "-l", str(driver)], cwd=project, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0 and out.is_file(), done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    result["stderr"] = done.stderr
    return result
