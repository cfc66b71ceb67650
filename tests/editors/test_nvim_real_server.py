"""Neovim plugin against the real `cad-lsp` server and the real default model (SmolLM2-135M).

Headless Neovim opens a buggy HumanEvalPack-Fix file and runs `:CadEdit Fix bugs in <name>.`
through the plugin. The untrained model rarely produces a correct fix, so these tests assert
mechanics: the buffer changed exactly as the server's edit program says, lines the program copies
are not rewritten (their extmarks survive), lines outside a range-scoped edit are identical, one
`:undo` restores the file, and a cancelled edit leaves it untouched.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from nvim_harness import describe, run_scenario

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

REPO = str(Path(__file__).resolve().parents[2])  # the server runs from a temp dir: import from here
TASK = "Python/0"  # has_close_elements: 13 lines, a nested loop to scope a range edit to
MAX_NEW_TOKENS = 32  # mechanics only; keeps each edit to ~30 model steps
TIMEOUT_S = 420


@pytest.fixture(scope="module")
def pair():
    from evaluation.corpus import load_pairs

    return next(p for p in load_pairs("python") if p.task_id == TASK)


@pytest.fixture
def buggy_file(tmp_path: Path, pair) -> Path:
    path = tmp_path / "project" / f"{pair.entry_point}.py"
    path.parent.mkdir()
    path.write_text(pair.document)
    return path


def server_cmd(*extra: str) -> list[str]:
    return [sys.executable, "-m", "cad_lsp", "--preload", "--device", "cpu", *extra]


def run_real(tmp_path, scenario, buggy_file, *, max_new_tokens=MAX_NEW_TOKENS, strategy="cad", **config):
    # Mechanics tests: the untrained model rarely finishes within a small budget, so opt in to
    # applying truncated programs (refused by default, see cad_lsp.settings).
    settings = {"maxNewTokens": max_new_tokens, "strategy": strategy, "device": "cpu", "applyTruncated": True}
    return run_scenario(tmp_path, scenario, file=buggy_file,
                        cmd=server_cmd("--max-new-tokens", str(max_new_tokens), "--strategy", strategy),
                        settings=settings, timeout_s=TIMEOUT_S,
                        env={"PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))},
                        **config)


def resolved_text(program: str, document: str) -> str:
    """What the server's program (returned in the command result) makes of the document."""
    from engine.program.grammar import parse
    from engine.program.resolver import resolve

    return resolve(parse(program), document, mode="clipped").text


def copied_rows(program: str, line_count: int) -> dict[int, set[int]]:
    """Original line (1-based) → the 0-based rows its copies occupy in the resolved text."""
    from engine.program.grammar import CopyLines, Gen, parse

    rows: dict[int, set[int]] = {}
    row = 0
    for op in parse(program):
        if isinstance(op, CopyLines):
            start, end = max(op.start, 1), min(op.end, line_count)
            for k in range(start, end + 1):
                rows.setdefault(k, set()).add(row + k - start)
            row += max(end - start + 1, 0)
        elif isinstance(op, Gen):
            text = op.text[1:] if op.text.startswith("\n") else op.text
            text = text[:-1] if text.endswith("\n") else text
            row += text.count("\n") + 1
        else:  # token-level copies: no line identity to check
            return {}
    return rows


def test_whole_buffer_edit_applies_program_and_undoes(tmp_path, buggy_file, pair):
    report = run_real(tmp_path, "edit", buggy_file, instruction=pair.instruction)
    before = pair.document.split("\n")[:-1]  # a buffer has no line after the final EOL
    assert report["before"] == before
    done = report["done"]
    assert done.get("error") is None, describe(report)
    if not done.get("applied"):
        pytest.fail(f"the edit was not applied: {done.get('message')}{describe(report)}")
    after = report["after"]
    assert after != before, "the server reported an applied edit but the buffer did not change" + describe(report)
    # The buffer is exactly what the server's edit program resolves to: copied lines arrive
    # untouched and nothing outside the program's output changed.
    result = json.loads(done["result"])
    # (a buffer keeps its final EOL in 'eol', so compare lines, not the trailing newline)
    expected_lines = resolved_text(result["program"], pair.document).removesuffix("\n").split("\n")
    assert after == expected_lines, describe(report)
    # Copied lines were not rewritten: the extmark at the start of each one moved with it.
    rows = copied_rows(result["program"], len(pair.document.split("\n")))
    for line, expected in rows.items():
        if line <= len(before) and min(expected) < len(after):
            assert tuple(report["mark_positions"][line - 1]) in {(r, 0) for r in expected}, (
                f"copied line {line} was rewritten by the edit (extmark at {report['mark_positions'][line - 1]},"
                f" expected one of rows {sorted(expected)}); program {result['program']!r}" + describe(report))
    assert report["after_undo"] == before, "one :undo must restore the original buffer"


PASTES = {
    "snippet-merge": ("Apply this:\n```python\n            if idx != idx2:\n                distance = abs(elem - elem2)\n"
                      "                # ... existing code ...\n```\n"),
    "patch": ("Here is the fix:\n```diff\n@@ ... @@\n             if idx != idx2:\n-                distance = elem - elem2\n"
              "+                distance = abs(elem - elem2)\n                 if distance < threshold:\n```\n"),
    "search-replace": ("<<<<<<< SEARCH\n                distance = elem - elem2\n=======\n"
                       "                distance = abs(elem - elem2)\n>>>>>>> REPLACE\n"),
}


@pytest.mark.parametrize("planner", sorted(PASTES))
def test_a_pasted_change_in_a_register_is_applied_without_decoding(tmp_path, buggy_file, pair, planner):
    """:CadPaste a: a chat-style snippet anchors at one place, a diff or SEARCH/REPLACE block fits one
    place, so the server applies it exactly."""
    old = "                distance = elem - elem2"
    assert old in pair.document
    report = run_real(tmp_path, "paste", buggy_file, register_text=PASTES[planner])
    assert "register z is empty" in report["messages"], describe(report)
    done = report["done"]
    assert done.get("applied") is True, describe(report)
    result = json.loads(done["result"])
    assert result["stats"]["planner"] == planner and result["stats"]["forwards"] == 0
    expected = pair.document.replace(old, "                distance = abs(elem - elem2)")
    assert report["after"] == expected.removesuffix("\n").split("\n"), describe(report)
    assert report["after_undo"] == report["before"]


def test_visual_range_edit_keeps_lines_outside_range(tmp_path, buggy_file, pair):
    line1, line2 = 6, 9  # the inner loop body of has_close_elements
    report = run_real(tmp_path, "edit_range", buggy_file, instruction=pair.instruction, line1=line1, line2=line2)
    before = report["before"]
    after = report["after"]
    assert report["marks"] == [line1, line2]
    done = report["done"]
    assert done.get("error") is None, describe(report)
    inside = len(after) - (len(before) - (line2 - line1 + 1))
    assert inside >= 0, f"lines outside the range were removed:\n{after}"
    assert after[:line1 - 1] == before[:line1 - 1], "lines above the range changed" + describe(report)
    assert after[line1 - 1 + inside:] == before[line2:], "lines below the range changed" + describe(report)
    # ... and were not rewritten: their extmarks kept their place (shifted by the size change).
    shift = inside - (line2 - line1 + 1)
    marks = report["mark_positions"]
    assert all(marks[k] == [k, 0] for k in range(line1 - 1)), marks
    assert all(marks[k] == [k + shift, 0] for k in range(line2, len(before))), marks
    edits = json.loads(done["result"])["edits"] if done.get("result") else 0
    if done.get("applied") and edits:
        assert after != before, describe(report)
    else:  # not applied, or the model reproduced the lines ("no change"): nothing may have moved
        assert after == before, describe(report)
    assert report["after_undo"] == before, "one :undo must restore the original buffer"


def test_cancel_mid_decode_leaves_buffer_untouched(tmp_path, buggy_file, pair):
    # regen re-decodes the whole function token by token: long enough to cancel mid-decode.
    report = run_real(tmp_path, "cancel", buggy_file, instruction=pair.instruction,
                      max_new_tokens=400, strategy="regen", cancel_when="decoding", settle_ms=1500)
    assert report["running"] is True
    done = report["done"]
    assert done["cancelled"] is True and done["applied"] is False
    assert report["after"] == report["before"], "a cancelled edit must not touch the buffer" + describe(report)
    assert "CadEditDone" == done["event"]
    # The server ended its progress for the cancelled edit.
    assert report["progress_ended"] is True, report["progress"]
    token_kinds = [p["kind"] for p in report["progress"]]
    assert "begin" in token_kinds and token_kinds[-1] == "end", report["progress"]


def test_code_action_prompts_then_edits(tmp_path, buggy_file, pair):
    """The server's "Apply edit instruction…" action: the plugin prompts, then the server edits."""
    report = run_real(tmp_path, "code_action", buggy_file, max_new_tokens=16,
                      action_title="Apply edit instruction…", answers=[pair.instruction])
    assert report["prompts"] == ["Edit instruction: "], describe(report)
    done = report["done"]
    assert done.get("error") is None, describe(report)
    result = json.loads(done["result"])
    if done.get("applied"):
        expected = resolved_text(result["program"], pair.document).removesuffix("\n").split("\n")
        assert report["after"] == expected, describe(report)
    else:
        assert report["after"] == report["before"], describe(report)
