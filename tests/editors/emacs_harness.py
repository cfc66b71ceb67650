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
import sys
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


FAKE_SERVER = ["-m", "tests.lsp.fake_engine_server"]   # after sys.executable: the server with a deterministic engine


def instruction_comment_edit(tmp_path: Path, driver: Path) -> dict:
    """The instruction comment's code action, run against the deterministic engine: the comment is
    consumed and the copied lines (with emoji) stay byte-identical. Returns what the driver saw."""
    got = run_emacs(tmp_path, DOC, [sys.executable, *FAKE_SERVER], "Apply: add a marker", driver=driver)
    assert got["error"] is None, got
    assert "Apply edit instruction…" in got["titles"] and "Apply: add a marker 🎯" in got["titles"]
    assert got["result"]["applied"] is True, got["result"]
    lines = DOC.split("\n")
    assert got["text"] == "\n".join([lines[0], *lines[2:4], "# edited: add a marker 🎯", ""])
    return got


def prompt_action_error(tmp_path: Path, driver: Path) -> None:
    """The prompt action, which needs a plugin, is an error that says how to use a comment instead."""
    got = run_emacs(tmp_path, DOC, [sys.executable, *FAKE_SERVER], "Apply edit instruction", driver=driver)
    assert got["error"] is not None and "needs an instruction" in got["error"] and "cad: " in got["error"], got
    assert got["text"] == DOC


def real_model_edit(tmp_path: Path, driver: Path) -> None:
    """The real server with the default model: the buffer holds exactly what the reply's program says."""
    from engine.program.grammar import parse
    from engine.program.resolver import resolve

    doc = (REPO / "examples" / "buggy_stats.py").read_text(encoding="utf-8")
    doc = doc.replace("def mean(values):\n", "def mean(values):\n    # cad: Fix the off-by-one bug in mean.\n")
    server = [sys.executable, "-m", "cad_lsp", "--preload", "--device", "cpu"]
    got = run_emacs(tmp_path, doc, server, "Apply: Fix the off-by-one", driver=driver, timeout=600)
    assert got["error"] is None, got
    reply = got["result"]
    assert reply["program"] and "stats" in reply, reply
    expected = resolve(parse(reply["program"]), doc, "clipped").text
    assert got["text"] == (expected if reply["applied"] else doc), reply
