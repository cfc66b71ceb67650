"""On Neovim < 0.10 the plugin says once, cleanly, that it needs 0.10, and loads nothing else.

Runs a user's init.lua that calls `require('cad').setup()` (the usual lazy.nvim/plain setup)
and then lets plugin/cad.lua load. With a real old Neovim when one is installed (Debian/Ubuntu
ship 0.7: `apt-get install neovim`, or set $CAD_OLD_NVIM), and always with the current Neovim
made to report an old version.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nvim_harness import PLUGIN_DIR, find_nvim

INIT = """
{prelude}
vim.opt.rtp:prepend({plugin!r})
local ok, err = pcall(function() require('cad').setup({{ cmd = {{ 'cad-lsp' }} }}) end)
local ok2, err2 = pcall(function() require('cad').edit({{ instruction = 'x' }}) end)
vim.g.cad_test_result = tostring(ok) .. ' ' .. tostring(err) .. ' | ' .. tostring(ok2) .. ' ' .. tostring(err2)
"""
FAKE_OLD = """
local real_has = vim.fn.has
vim.fn.has = function(feature)
  if feature:match('^nvim%-0%.1%d') then return 0 end
  return real_has(feature)
end
"""


def old_nvim() -> Path | None:
    candidates = [os.environ.get("CAD_OLD_NVIM"), shutil.which("nvim"), "/usr/bin/nvim"]
    for c in candidates:
        if not c or not Path(c).exists():
            continue
        out = subprocess.run([c, "--version"], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r"NVIM v0\.(\d+)\.", out)
        if m and int(m.group(1)) < 10:
            return Path(c)
    return None


def run_init(tmp_path: Path, nvim: Path, env: dict, prelude: str = "") -> tuple[str, str]:
    init = tmp_path / "init.lua"
    init.write_text(INIT.format(prelude=prelude, plugin=str(PLUGIN_DIR)))
    out = tmp_path / "out.txt"
    script = f"call writefile([g:cad_test_result, exists(':CadEdit')] + split(execute('messages'), \"\\n\"), '{out}') | qa!"
    proc = subprocess.run([str(nvim), "--headless", "-n", "-i", "NONE", "-u", str(init), "-c", script],
                          env={**os.environ, **env}, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    return out.read_text() if out.exists() else "", proc.stdout + proc.stderr


def check(text: str, output: str) -> None:
    lines = text.splitlines()
    assert lines, f"nvim wrote nothing:\n{output}"
    assert lines[0] == "true nil | true nil", lines[0]
    assert lines[1] == "0", ":CadEdit must not be defined on an unsupported Neovim"
    everything = text + output
    for bad in ("stack traceback", "unexpected event", "E5108", "E5113", "Error detected"):
        assert bad not in everything, f"{bad!r} in:\n{everything}"
    assert not re.search(r"\.lua:\d+:", everything), everything
    assert everything.count("Neovim >= 0.10 is required") >= 1
    assert text.count("Neovim >= 0.10 is required") == 1, "said exactly once:\n" + text


def test_current_neovim_reporting_an_old_version(tmp_path):
    nvim, env = find_nvim()
    text, output = run_init(tmp_path, nvim, env, prelude=FAKE_OLD)
    check(text, output)


def test_real_old_neovim(tmp_path):
    nvim = old_nvim()
    if nvim is None:
        pytest.skip("no Neovim < 0.10 installed (apt-get install neovim on Debian/Ubuntu, or set CAD_OLD_NVIM)")
    text, output = run_init(tmp_path, nvim, {})
    check(text, output)
