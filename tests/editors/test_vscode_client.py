"""The compiled VS Code extension with the REAL vscode-languageclient, under node with an
in-memory `vscode` module (tests/editors/vscode_shim.js; @vscode/test-electron needs a VS Code
download and a display, neither available here).

Nothing of the client is faked: `activate()` builds the LanguageClient, which spawns the server
command (appending `--stdio`), initializes, syncs the document, asks for code actions and
applies the server's `workspace/applyEdit`. Mechanics run against the scripted server
(tests/editors/fake_server.py, seconds); one scenario runs against the real `cad-lsp` and the
default model.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vscode_harness import run_driver

FAKE_SERVER = Path(__file__).with_name("fake_server.py")
CAD_LSP = Path(sys.executable).with_name("cad-lsp")
SOURCE = "def add(a, b):\n    total = a - b\n    return total\n"


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "buggy.py"
    path.write_text(SOURCE)
    return path


def fake(tmp_path: Path, **settings) -> tuple[dict, Path]:
    log = tmp_path / "fake-server.jsonl"
    return {"copyAsDecode.server.command": sys.executable,
            "copyAsDecode.server.args": [str(FAKE_SERVER)], **settings}, log


def received(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run_fake(vscode_extension, tmp_path, config: dict) -> tuple[dict, list[dict]]:
    settings, log = fake(tmp_path)
    import os
    os.environ["FAKE_CAD_LOG"] = str(log)  # inherited by the node driver and the server it spawns
    try:
        report = run_driver(vscode_extension, {"settings": settings, **config}, timeout_s=60)
    finally:
        os.environ.pop("FAKE_CAD_LOG", None)
    return report, received(log)


def test_code_action_through_the_real_client(vscode_extension, tmp_path, doc):
    report, got = run_fake(vscode_extension, tmp_path, {
        "scenario": "code_action", "file": str(doc), "action_title": "Apply: upper",
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 4}}})
    assert report["spawn"]["args"][-1] == "--stdio", report["spawn"]
    assert report["action_titles"] == ["Apply edit instruction…", "Apply: upper"]
    assert report["action_kinds"] == ["refactor.rewrite", "refactor.rewrite"]
    assert report["after"] == SOURCE.replace("    total = a - b", "    TOTAL = A - B")
    methods = [m.get("method") for m in got]
    assert methods[:2] == ["initialize", "initialized"]
    assert "textDocument/didOpen" in methods and "textDocument/didChange" in methods
    assert methods[-2:] == ["shutdown", "exit"]
    assert report["server_exit"]["code"] == 0
    assert report["status_ready"] == "$(sparkle) CaD"
    assert any("upper" in text for text in report["status_bar"]), report["status_bar"]


def test_prompting_code_action_sends_the_typed_instruction_and_selection_lines(vscode_extension, tmp_path, doc):
    report, got = run_fake(vscode_extension, tmp_path, {
        "scenario": "code_action", "file": str(doc), "action_title": "Apply edit instruction…", "answers": ["upper"],
        "range": {"start": {"line": 1, "character": 3}, "end": {"line": 2, "character": 2}}})
    assert len(report["input_boxes"]) == 1
    sent = [m["params"] for m in got if m.get("method") == "workspace/executeCommand"]
    assert len(sent) == 1 and sent[0]["arguments"][0]["instruction"] == "upper"
    assert report["after"].split("\n")[1:3] == ["    TOTAL = A - B", "    RETURN TOTAL"]


def test_preview_then_apply_reuses_the_preview(vscode_extension, tmp_path, doc):
    report, got = run_fake(vscode_extension, tmp_path, {
        "scenario": "preview_apply", "file": str(doc), "answers": ["upper"], "choices": ["Apply"]})
    outcome = report["outcome"]
    assert outcome["choice"] == "Apply" and outcome["applied"]["applied"] is True, outcome
    assert report["after"] == SOURCE.upper()
    (diff,) = report["diffs"]
    assert diff["left"] == doc.as_uri() and diff["right"].startswith("cad-preview:"), diff
    commands = [m["params"]["command"] for m in got if m.get("method") == "workspace/executeCommand"]
    assert commands == ["cad.previewEdit", "cad.applyPreview"], "apply must not decode again"
    offered = [m for m in report["messages"] if m["items"]]
    assert offered and offered[0]["items"] == ["Apply", "Discard"]


def test_preview_discard_changes_nothing(vscode_extension, tmp_path, doc):
    report, got = run_fake(vscode_extension, tmp_path, {
        "scenario": "preview_apply", "file": str(doc), "answers": ["upper"], "choices": ["Discard"]})
    assert report["after"] == SOURCE
    commands = [m["params"]["command"] for m in got if m.get("method") == "workspace/executeCommand"]
    assert commands == ["cad.previewEdit"]


def test_cancel_from_the_status_bar(vscode_extension, tmp_path, doc):
    report, got = run_fake(vscode_extension, tmp_path, {
        "scenario": "cancel_from_status_bar", "file": str(doc), "answers": ["slow upper"]})
    assert report["cancelled_count"] == 1
    assert report["status_while_running"].startswith("$(sync~spin) CaD:"), report["status_while_running"]
    assert report["result"] is None and report["after"] == SOURCE
    assert report["status_after"] == "$(sparkle) CaD"
    methods = [m.get("method") for m in got]
    assert "$/cancelRequest" in methods and "window/workDoneProgress/cancel" in methods


@pytest.mark.real_model
def test_real_client_spawns_real_server_and_applies_a_code_action(vscode_extension, tmp_path, doc):
    """The acceptance scenario: real client, real `cad-lsp` (with the `--stdio` the client appends),
    initialize, one prompting code action decoded by the default model and applied."""
    if not CAD_LSP.exists():
        pytest.skip(f"{CAD_LSP} is not installed (run `make setup`)")
    settings = {"copyAsDecode.server.command": str(CAD_LSP), "copyAsDecode.maxNewTokens": 24,
                "copyAsDecode.applyTruncated": True}
    report = run_driver(vscode_extension, {
        "scenario": "code_action", "file": str(doc), "settings": settings, "answers": ["Fix the bug in add."],
        "action_title": "Apply edit instruction…", "start_timeout_ms": 60000}, timeout_s=600)
    print(f"spawn -> initialized: {report['spawn_to_initialized_ms']} ms; steps: {report['steps']}")
    assert report["spawn"] == {"command": str(CAD_LSP), "args": ["--stdio"]}
    assert report["server_info"]["name"] == "cad-lsp"
    assert "Apply edit instruction…" in report["action_titles"]
    result = report["result"]
    assert result["applied"] is True, result
    assert result["program"].startswith("<program>")
    if result["edits"]:
        assert report["version"] > 1 and report["after"] != report["before"], "the applied edit did not reach the document"
    else:
        assert report["after"] == report["before"]
    log = report["output"]["Copy-as-Decode"]
    assert "it/s" not in log and "%|" not in log, "model-loading progress bars reached the client log"
    assert report["server_exit"]["code"] == 0


CLIPBOARD = {
    "snippet-merge": ("Use this:\n```python\ndef add(a, b):\n    total = a + b\n    # ... existing code ...\n```\n",
                      "merged"),
    "patch": ("```diff\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    total = a - b\n+    total = a + b\n```\n",
              "pasted diff applied"),
}


@pytest.mark.real_model
@pytest.mark.parametrize("planner", sorted(CLIPBOARD))
def test_clipboard_change_is_applied_by_the_real_server(vscode_extension, tmp_path, doc, planner):
    """A chat-style snippet, or a unified diff, on the clipboard: the real server applies it exactly
    (by its anchors, or by its context lines), without decoding."""
    if not CAD_LSP.exists():
        pytest.skip(f"{CAD_LSP} is not installed (run `make setup`)")
    clipboard, said = CLIPBOARD[planner]
    report = run_driver(vscode_extension, {
        "scenario": "apply_clipboard", "file": str(doc), "clipboard": clipboard, "start_timeout_ms": 60000,
        "settings": {"copyAsDecode.server.command": str(CAD_LSP)}}, timeout_s=600)
    result = report["result"]
    assert result["applied"] is True and result["stats"]["planner"] == planner, result
    assert report["after"] == SOURCE.replace("a - b", "a + b")
    assert any(said in m["text"] for m in report["messages"]), report["messages"]


def test_empty_clipboard_is_a_clear_warning(vscode_extension, tmp_path, doc):
    report, got = run_fake(vscode_extension, tmp_path, {"scenario": "apply_clipboard", "file": str(doc), "clipboard": " \n"})
    assert report["result"] is None and report["after"] == SOURCE
    assert any("clipboard is empty" in m["text"] for m in report["messages"]), report["messages"]
    assert not [m for m in got if m.get("method") == "workspace/executeCommand"]


# -- against the real cad_lsp server with a deterministic engine (tests/editors/fake_engine_lsp.py) --

FAKE_ENGINE = Path(__file__).with_name("fake_engine_lsp.py")
LINE2 = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}}


def run_fake_engine(vscode_extension, tmp_path, config: dict) -> tuple[dict, list[str]]:
    import os
    log = tmp_path / "decodes.log"
    os.environ["FAKE_ENGINE_LOG"] = str(log)
    try:
        settings = {"copyAsDecode.server.command": sys.executable, "copyAsDecode.server.args": [str(FAKE_ENGINE)],
                    **config.pop("settings_extra", {})}
        report = run_driver(vscode_extension, {"settings": settings, **config}, timeout_s=90)
    finally:
        os.environ.pop("FAKE_ENGINE_LOG", None)
    return report, (log.read_text().splitlines() if log.exists() else [])


def test_preview_then_apply_decodes_once_on_the_real_server(vscode_extension, tmp_path, doc):
    report, decodes = run_fake_engine(vscode_extension, tmp_path, {
        "scenario": "preview_apply", "file": str(doc), "answers": ["upper"], "choices": ["Apply"]})
    outcome = report["outcome"]
    assert outcome["preview"]["previewId"] and outcome["preview"]["newText"] == SOURCE.upper()
    assert outcome["applied"]["applied"] is True and outcome["applied"]["reusedPreview"] is True, outcome
    assert report["after"] == SOURCE.upper()
    assert decodes == ["upper"], "apply after preview must reuse the computed program, not decode again"
    log = report["output"]["Copy-as-Decode"]
    shown = log + " ".join(m["text"] for m in report["messages"])
    assert "unknown setting" not in shown and "must be" not in shown, "the server rejected a setting the extension sends"


@pytest.mark.parametrize("choice", ["Apply", "Discard"])
def test_an_edit_held_for_review_opens_the_diff_and_applies_only_on_apply(vscode_extension, tmp_path, doc, choice):
    report, decodes = run_fake_engine(vscode_extension, tmp_path, {
        "scenario": "held_apply", "file": str(doc), "answers": ["upper unsure"], "choices": [choice],
        "settings_extra": {"copyAsDecode.minConfidence": 0.4}})
    assert any("below cad.minConfidence 0.4" in m["text"] for m in report["messages"]), report["messages"]
    assert [d["title"] for d in report["diffs"]] == ["Copy-as-Decode: upper unsure (review: low confidence)"]
    applied = choice == "Apply"
    assert report["result"]["applied"] is applied, report["result"]
    assert report["after"] == (SOURCE.upper() if applied else SOURCE)
    assert decodes == ["upper unsure"], "applying the held edit must not decode again"


def test_typing_elsewhere_while_decoding_keeps_the_edit(vscode_extension, tmp_path, doc):
    typed = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}, "text": "async def"}
    report, _ = run_fake_engine(vscode_extension, tmp_path, {
        "scenario": "code_action", "file": str(doc), "action_title": "Apply edit instruction…",
        "answers": ["slow upper"], "range": LINE2, "type_at": typed})
    result = report["result"]
    assert result["applied"] is True and "rebased over your changes" in result["message"], result
    assert report["after"] == "async def add(a, b):\n    TOTAL = A - B\n    return total\n"


def test_typing_on_the_edited_lines_discards_the_edit(vscode_extension, tmp_path, doc):
    typed = {"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 9}}, "text": "sum"}
    report, _ = run_fake_engine(vscode_extension, tmp_path, {
        "scenario": "code_action", "file": str(doc), "action_title": "Apply edit instruction…",
        "answers": ["slow upper"], "range": LINE2, "type_at": typed})
    result = report["result"]
    assert result["applied"] is False and result["discarded"] is True, result
    assert "overlap line(s) 2" in result["message"], result["message"]
    assert report["after"] == SOURCE.replace("total = a", "sum = a"), "the user's typing must stay, the edit must not land"
