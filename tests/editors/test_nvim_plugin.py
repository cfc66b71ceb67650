"""Neovim plugin mechanics against a scripted LSP server (tests/editors/fake_server.py).

Real headless Neovim, real plugin, real LSP over stdio; only the model is replaced by a
deterministic edit ("upper" upper-cases the edited lines), so these run in seconds each.
The same scenarios against the real `cad-lsp` + default model are in test_nvim_real_server.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvim_harness import PLUGIN_DIR, describe, find_nvim, run_scenario

FAKE_SERVER = Path(__file__).with_name("fake_server.py")
SOURCE = "def add(a, b):\n    total = a - b\n    return total\n\n\nprint(add(1, 2))\n"


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "project" / "buggy.py"
    path.parent.mkdir()
    path.write_text(SOURCE)
    return path


def run(tmp_path: Path, scenario: str, doc: Path, **config) -> tuple[dict, list[dict]]:
    log = tmp_path / "server-log.jsonl"
    report = run_scenario(
        tmp_path, scenario, file=doc, cmd=[sys.executable, str(FAKE_SERVER)], timeout_s=60,
        env={"FAKE_CAD_LOG": str(log)}, **config,
    )
    received = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return report, received


def commands_sent(received: list[dict]) -> list[dict]:
    return [m["params"] for m in received if m.get("method") == "workspace/executeCommand"]


def test_edit_whole_buffer_applies_and_undoes(tmp_path, doc):
    report, received = run(tmp_path, "edit", doc, instruction="upper")
    before = SOURCE.split("\n")[:-1]
    assert report["before"] == before
    assert report["after"] == [line.upper() for line in before], describe(report)
    assert report["after_undo"] == before, "one :undo must restore the buffer"
    assert report["done"]["applied"] is True
    sent = commands_sent(received)
    assert [p["command"] for p in sent] == ["cad.applyEdit"]
    args = sent[0]["arguments"][0]
    assert args["instruction"] == "upper" and "range" not in args
    assert args["uri"].endswith("/buggy.py")
    # progress arrived on the token the client chose
    token = sent[0]["workDoneToken"]
    assert {p["kind"] for p in report["progress"] if p["token"] == token} >= {"begin", "end"}


def test_visual_range_edit_leaves_other_lines_identical(tmp_path, doc):
    report, received = run(tmp_path, "edit_range", doc, instruction="upper", line1=2, line2=3)
    before = SOURCE.split("\n")[:-1]
    assert report["marks"] == [2, 3]
    after = report["after"]
    assert after[1:3] == [before[1].upper(), before[2].upper()], describe(report)
    assert after[:1] == before[:1] and after[3:] == before[3:]
    # lines outside the range were not rewritten: their extmarks did not move
    for row in (0, 3, 4, 5):
        assert report["mark_positions"][row] == [row, 0], report["mark_positions"]
    assert report["after_undo"] == before
    rng = commands_sent(received)[0]["arguments"][0]["range"]
    assert rng == {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": len(before[2])}}


def test_edit_without_instruction_prompts(tmp_path, doc):
    report, received = run(tmp_path, "prompt", doc, answers=["upper"])
    assert report["prompts"] == ["Edit instruction: "]
    assert report["after"] == [line.upper() for line in SOURCE.split("\n")[:-1]], describe(report)
    assert commands_sent(received)[0]["arguments"][0]["instruction"] == "upper"


def test_code_action_without_instruction_is_intercepted_and_prompts(tmp_path, doc):
    report, received = run(tmp_path, "code_action", doc, action_title="Apply edit instruction…",
                           answers=["upper"])
    assert report["prompts"] == ["Edit instruction: "], describe(report)
    sent = commands_sent(received)
    # exactly one request reached the server, and it carries the prompted instruction
    assert len(sent) == 1 and sent[0]["arguments"][0]["instruction"] == "upper"
    assert report["done"]["applied"] is True
    assert report["after"] != report["before"]


def test_code_action_with_instruction_is_forwarded_without_prompt(tmp_path, doc):
    report, received = run(tmp_path, "code_action", doc, action_title="Apply: upper")
    assert report["prompts"] == []
    sent = commands_sent(received)
    assert len(sent) == 1 and sent[0]["command"] == "cad.applyEdit"
    assert sent[0]["arguments"][0]["instruction"] == "upper"
    assert report["after"] != report["before"], describe(report)


def test_preview_shows_diff_and_does_not_touch_buffer(tmp_path, doc):
    report, received = run(tmp_path, "preview_then_edit", doc, instruction="upper")
    assert report["after_preview"] == report["before"]
    assert report["preview_filetype"] == "diff"
    assert "+    TOTAL = A - B" in report["preview_lines"], report["preview_lines"]
    assert [p["command"] for p in commands_sent(received)] == ["cad.previewEdit", "cad.applyEdit"]


@pytest.mark.parametrize("with_key", [False, True], ids=["CadCancel", "ctrl-c"])
def test_cancel_mid_edit_leaves_buffer_untouched(tmp_path, doc, with_key):
    report, received = run(tmp_path, "cancel", doc, instruction="slow upper", cancel_with_key=with_key)
    assert report["running"] is True
    assert report["cancel_map"] == "cad: cancel the running edit"
    assert report.get("cancel_map_after") is None, "the cancel key must be unmapped after the edit"
    assert report["done"]["cancelled"] is True and report["done"]["applied"] is False
    assert report["progress_ended"] is True, "the server must end the cancelled edit's progress"
    assert report["after"] == report["before"], describe(report)
    sent = commands_sent(received)
    methods = [m.get("method") for m in received]
    assert "$/cancelRequest" in methods and "window/workDoneProgress/cancel" in methods
    cancel = next(m for m in received if m.get("method") == "window/workDoneProgress/cancel")
    assert cancel["params"]["token"] == sent[0]["workDoneToken"]
    assert not any(m.get("method") is None and m.get("id", 0) > 1000 for m in received), \
        "the server never asked to apply an edit, so no applyEdit reply should exist"


def test_help_file_has_tags_and_opens(tmp_path):
    """`:help cad` works once helptags are generated (as plugin managers do)."""
    plugin = tmp_path / "cad.nvim"
    shutil.copytree(PLUGIN_DIR, plugin)
    nvim, env = find_nvim()
    script = (
        f"set rtp^={plugin} | helptags {plugin}/doc | help cad | "
        "call writefile([expand('%:t'), getline('.')], 'help.out') | qa!"
    )
    subprocess.run([str(nvim), "--headless", "--clean", "-n", "-i", "NONE", "-c", script],
                   cwd=tmp_path, env={**os.environ, **env}, timeout=60, check=True,
                   capture_output=True, stdin=subprocess.DEVNULL)
    name, line = (tmp_path / "help.out").read_text().splitlines()
    assert name == "cad.txt"
    assert "*cad*" in line
    tags = (plugin / "doc" / "tags").read_text()
    for tag in (":CadEdit", ":CadPreview", ":CadCancel", "cad-setup", "CadEditDone"):
        assert f"{tag}\tcad.txt" in tags


def test_one_client_per_project_root_is_reused(tmp_path, doc):
    (doc.parent / ".git").mkdir()
    sibling = doc.parent / "sub" / "other.py"
    sibling.parent.mkdir()
    sibling.write_text("x = 1\n")
    elsewhere = tmp_path / "second" / "third.py"
    elsewhere.parent.mkdir()
    (elsewhere.parent / "pyproject.toml").write_text("")
    elsewhere.write_text("y = 2\n")
    report, _ = run(tmp_path, "clients_per_root", doc, others=[str(sibling), str(elsewhere)])
    first, same_root, other_root = report["client_ids"]
    assert first == same_root, "a file under the same root must reuse the client"
    assert other_root != first, "a file under another root gets its own client"
    assert report["client_count"] == 2


def run_lua(tmp_path: Path, code: str) -> str:
    """Run Lua in headless nvim with the plugin on 'rtp'; returns what the code wrote to `out`."""
    nvim, env = find_nvim()
    script = tmp_path / "check.lua"
    script.write_text(f"vim.opt.rtp:prepend({str(PLUGIN_DIR)!r})\nlocal out = {{}}\n{code}\n"
                      f"vim.fn.writefile(out, {str(tmp_path / 'lua.out')!r})\nvim.cmd('qa!')\n")
    subprocess.run([str(nvim), "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {script}"],
                   cwd=tmp_path, env={**os.environ, **env}, timeout=60, check=True, capture_output=True,
                   stdin=subprocess.DEVNULL)
    return (tmp_path / "lua.out").read_text()


def test_setup_rejects_bad_options_with_a_message_naming_them(tmp_path):
    out = run_lua(tmp_path, """
for _, bad in ipairs({ { filetypes = 3 }, { cmd = {} }, { cancel_key = 1 }, { settings = 'x' } }) do
  local ok, err = pcall(require('cad').setup, bad)
  out[#out + 1] = tostring(ok) .. ' ' .. tostring(err)
end
""")
    lines = out.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["false"] * 4
    for line, key in zip(lines, ["filetypes", "cmd", "cancel_key", "settings"]):
        assert f"option `{key}`" in line and ":help cad-setup" in line, line


def test_checkhealth_reports_the_server_command(tmp_path):
    out = run_lua(tmp_path, f"""
require('cad').setup({{ cmd = {{ {sys.executable!r}, '-m', 'cad_lsp' }} }})
vim.cmd('checkhealth cad')
vim.list_extend(out, vim.api.nvim_buf_get_lines(0, 0, -1, false))
require('cad').setup({{ cmd = {{ 'no-such-cad-lsp' }} }})
vim.cmd('checkhealth cad')
vim.list_extend(out, vim.api.nvim_buf_get_lines(0, 0, -1, false))
""")
    assert "server command: " + sys.executable in out
    assert "`no-such-cad-lsp` is not executable" in out


# -- against the real cad_lsp server with a deterministic engine (tests/editors/fake_engine_lsp.py) --

FAKE_ENGINE = Path(__file__).with_name("fake_engine_lsp.py")


def run_engine(tmp_path: Path, scenario: str, doc: Path, **config) -> tuple[dict, list[str]]:
    log = tmp_path / "decodes.log"
    report = run_scenario(tmp_path, scenario, file=doc, cmd=[sys.executable, str(FAKE_ENGINE)], timeout_s=90,
                          env={"FAKE_ENGINE_LOG": str(log)}, **config)
    return report, (log.read_text().splitlines() if log.exists() else [])


def test_preview_then_apply_with_a_decodes_once(tmp_path, doc):
    report, decodes = run_engine(tmp_path, "preview_apply", doc, instruction="upper")
    assert "a: apply" in report["preview_winbar"]
    assert "+    TOTAL = A - B" in report["preview_lines"]
    assert report["done"]["command"] == "cad.applyPreview" and report["done"]["applied"] is True, describe(report)
    assert report["after"] == SOURCE.upper().split("\n")[:-1]
    assert decodes == ["upper"], "applying the preview must not decode again"
    assert report["current_buf_is_source"] is True


def test_an_edit_held_for_review_opens_as_a_preview_that_a_applies(tmp_path, doc):
    log = tmp_path / "decodes.log"
    report = run_scenario(tmp_path, "held_apply", file=doc, timeout_s=90, env={"FAKE_ENGINE_LOG": str(log)},
                          cmd=[sys.executable, str(FAKE_ENGINE), "--min-confidence", "0.4"], instruction="upper unsure")
    assert report["held"]["applied"] is False and "below cad.minConfidence" in report["held"]["message"], \
        describe(report)
    assert report["after_held"] == SOURCE.split("\n")[:-1], "a held edit changes nothing"
    assert "a: apply" in report["preview_winbar"] and "+    TOTAL = A - B" in report["preview_lines"]
    assert report["done"]["command"] == "cad.applyPreview" and report["done"]["applied"] is True, describe(report)
    assert report["after"] == SOURCE.upper().split("\n")[:-1]
    assert log.read_text().splitlines() == ["upper unsure"], "applying the held edit must not decode again"


def test_typing_elsewhere_while_decoding_keeps_the_edit(tmp_path, doc):
    report, decodes = run_engine(tmp_path, "type_elsewhere", doc, instruction="slow upper", line1=2, line2=2,
                                 type_line=6, type_text="print(add(3, 4))")
    before = SOURCE.split("\n")[:-1]
    expected = list(before)
    expected[1] = before[1].upper()
    expected[5] = "print(add(3, 4))"
    assert report["done"]["applied"] is True, describe(report)
    assert "rebased over your changes" in report["done"]["message"]
    assert report["after"] == expected
    assert report["after_undo"][1] == before[1] and report["after_undo"][5] == "print(add(3, 4))", \
        "one undo reverts the edit, not the user's typing"
    assert decodes == ["slow upper"]


def test_typing_on_the_edited_line_discards_with_a_reason(tmp_path, doc):
    report, _ = run_engine(tmp_path, "type_elsewhere", doc, instruction="slow upper", line1=2, line2=3,
                           type_line=3, type_text="    return -total")
    assert report["done"]["applied"] is False, describe(report)
    assert "overlap line(s) 2-3" in report["done"]["message"]
    assert report["after"][1:3] == ["    total = a - b", "    return -total"]
