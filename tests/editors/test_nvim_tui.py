"""The cad plugin in a REAL Neovim terminal UI (tests/editors/tui_driver.lua), as a user types it.

Checks what only a UI shows: no hit-enter prompt ("Press ENTER or type command to continue")
on the code-action path (vim.lsp.buf.code_action → vim.ui.select → vim.ui.input → progress →
result), one message per result, the statusline cleared when a queued edit is cancelled.
Mechanics against the scripted server (tests/editors/fake_server.py).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tui_harness import keys, run_tui, show

FAKE_SERVER = Path(__file__).with_name("fake_server.py")
SOURCE = "def add(a, b):\n    total = a - b\n    return total\n"


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "project" / "buggy.py"
    path.parent.mkdir()
    path.write_text(SOURCE)
    return path


def code_action_steps(answer: str) -> list[dict]:
    return [
        {"wait": "def add"}, {"wait_status": "attached"}, {"frame": "opened"},
        keys(":lua vim.lsp.buf.code_action()\r"), {"wait": "Apply edit instruction"}, {"frame": "code actions"},
        keys("1\r"), {"wait": "Edit instruction"}, keys(answer), {"frame": "instruction typed"}, keys("\r"),
        {"wait_status": "done"}, {"frame": "result"}, {"sleep": 1500}, {"frame": "settled"},
    ]


def test_code_action_path_has_no_hit_enter_prompt(tmp_path, doc):
    report = run_tui(tmp_path, doc, [sys.executable, str(FAKE_SERVER)], code_action_steps("upper"), timeout_s=90)
    assert report["ok"], show(report)
    (done,) = [e for e in report["events"] if e["event"] == "CadEditDone"]
    before = SOURCE.split("\n")[:-1]
    # the cursor is on line 1, so the action's range is that line
    assert done["applied"] is True and done["lines"] == [before[0].upper()] + before[1:], show(report)
    assert report["hit_enter"] == 0, show(report)
    result = "\n".join(next(f["lines"] for f in report["frames"] if f["name"] == "settled"))
    assert result.count("cad: ") == 1, "exactly one message for the result:\n" + result
    assert "changed 2 line(s)" in result or "changed" in result, result


def test_server_notice_and_result_make_one_message(tmp_path, doc):
    """The server's showMessage about the edit (e.g. truncation) is folded into the one result
    message instead of stacking a second line (which asked for Enter)."""
    steps = [{"wait": "def add"}, {"wait_status": "attached"}, keys(":CadEdit upper warn\r"),
             {"wait_status": "done"}, {"sleep": 1000}, {"frame": "result"}]
    report = run_tui(tmp_path, doc, [sys.executable, str(FAKE_SERVER)], steps, timeout_s=90)
    assert report["ok"] and report["hit_enter"] == 0, show(report)
    screen = "\n".join(report["frames"][0]["lines"])
    assert screen.count("cad: ") == 1 and "max_new_tokens" in screen, screen
    (done,) = [e for e in report["events"] if e["event"] == "CadEditDone"]
    assert done["server_messages"][0]["message"].endswith("closed early")


def test_cancelling_a_queued_edit_clears_the_statusline_at_once(tmp_path, doc):
    steps = [{"wait": "def add"}, {"wait_status": "attached"}, keys(":CadEdit stuck\r"),
             {"wait": "queued (position 2)"}, {"frame": "queued"}, keys(":CadCancel\r"),
             {"wait_status": "done"}, {"frame": "cancelled", "settle_ms": 800}]
    report = run_tui(tmp_path, doc, [sys.executable, str(FAKE_SERVER)], steps, timeout_s=90)
    assert report["ok"], show(report)
    queued, cancelled = (next(f["lines"] for f in report["frames"] if f["name"] == n) for n in ("queued", "cancelled"))
    assert "queued (position 2)" in queued[-2], queued  # the statusline row
    assert "queued" not in "\n".join(cancelled), "the statusline kept the cancelled edit:\n" + "\n".join(cancelled)
    (done,) = [e for e in report["events"] if e["event"] == "CadEditDone"]
    assert done["cancelled"] is True and done["statusline"] == ""


CAD_LSP = Path(sys.executable).with_name("cad-lsp")


@pytest.mark.real_model
def test_code_action_with_the_real_server_in_a_real_tui(tmp_path, doc):
    """The issue's scenario end to end: real TUI, real cad-lsp, default model; the statusline shows
    the decode's progress, no Enter is ever needed, one message reports the result. With
    $CAD_SCREENCAST_OUT set, the frames are written there (docs/editors.md shows them)."""
    if not CAD_LSP.exists():
        pytest.skip(f"{CAD_LSP} is not installed (run `make setup`)")
    steps = [
        {"wait": "def add"}, {"wait_status": "attached"}, {"frame": "1. the buggy file"},
        keys(":lua vim.lsp.buf.code_action()\r"), {"wait": "Apply edit instruction"},
        {"frame": "2. vim.lsp.buf.code_action() (or gra)"},
        keys("1\r"), {"wait": "Edit instruction"}, keys("Fix the bug in add."), {"frame": "3. the instruction"},
        keys("\r"), {"wait": "decoding:", "or_status": "done"}, {"frame": "4. decoding: progress in the statusline"},
        {"wait_status": "done"}, {"sleep": 1000}, {"frame": "5. the result: one message, :undo reverts it"},
    ]
    report = run_tui(tmp_path, doc, [str(CAD_LSP)], steps, timeout_s=300,
                     settings={"maxNewTokens": 48, "applyTruncated": True})
    assert report["ok"], show(report)
    assert report["hit_enter"] == 0, show(report)
    final = "\n".join(report["frames"][-1]["lines"])
    assert final.count("cad: ") == 1, final
    (done,) = [e for e in report["events"] if e["event"] == "CadEditDone"]
    assert done["applied"] is True or done["message"], done
    out = os.environ.get("CAD_SCREENCAST_OUT")
    if out:
        Path(out).write_text("\n\n".join(
            f"=== {f['name']}\n" + "\n".join(line.rstrip() for line in f["lines"]) for f in report["frames"]) + "\n")
