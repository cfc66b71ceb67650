"""Unit tests of the server's pure parts: instruction comments, settings, arguments, worker."""
from __future__ import annotations

import threading

import pytest

from cad_lsp.arguments import parse_edit_args
from cad_lsp.diffs import unified_diff
from cad_lsp.errors import CommandArgumentError
from cad_lsp.instruction_comments import (
    drop_line_from_program, find_instruction_comments, locate_comment, parse_instruction_comment,
)
from cad_lsp.settings import Settings, SettingsError
from cad_lsp.worker import EditJob, EngineWorker
from engine.api import EditCancelled, EditRequest, Progress
from engine.program.grammar import CopyLines, CopyTokens, Gen
from engine.program.resolver import resolve


@pytest.mark.parametrize("line, expected", [
    ("# cad: make it iterative", "make it iterative"),
    ("    // CAD: use a set", "use a set"),
    ("-- cad: rename x", "rename x"),
    ("/* cad: inline this */", "inline this"),
    ("<!-- cad: add alt text -->", "add alt text"),
    ("(* cad: fold *)", "fold"),
    ("{- cad: point-free -}", "point-free"),
    (";; cad: simplify", "simplify"),
    ("% cad: fix the units.", "fix the units."),
    ("#cad:tighten", "tighten"),
    ("x = 1  # cad: not at line start", None),
    ("cad: no leader", None),
    ("# cad:", None),
    ("# todo: something", None),
])
def test_parse_instruction_comment(line, expected):
    assert parse_instruction_comment(line) == expected


def test_find_instruction_comments_in_range():
    doc = "a\n# cad: one\nb\n// cad: two\r\nc"
    assert [(c.line, c.instruction) for c in find_instruction_comments(doc)] == [(1, "one"), (3, "two")]
    assert [c.line for c in find_instruction_comments(doc, 2, 4)] == [3]


def test_locate_comment_follows_moved_line():
    doc = "x\n# cad: go\ny"
    assert locate_comment(doc, 1, "# cad: go") == 1
    assert locate_comment("new\n" + doc, 1, "# cad: go") == 2
    assert locate_comment("x\ny", 1, "# cad: go") is None


@pytest.mark.parametrize("program", [
    (CopyLines(1, 5),),
    (CopyLines(1, 2), Gen("new"), CopyLines(3, 5)),
    (CopyLines(3, 3), Gen("z")),
    (Gen("a"), CopyLines(2, 4)),
    (CopyLines(4, 5), CopyLines(1, 3)),
])
def test_drop_line_removes_exactly_the_comment_line(program):
    doc = "a\nb\n# cad: x\nd\ne"
    before = resolve(program, doc).text.split("\n")
    after = resolve(drop_line_from_program(program, 3), doc).text.split("\n")
    expected = list(before)
    copies_it = any(isinstance(op, CopyLines) and op.start <= 3 <= op.end for op in program)
    if copies_it:
        expected.remove("# cad: x")
    assert after == expected


def test_drop_line_leaves_token_programs():
    program = (CopyTokens(0, 3), Gen("x"))
    assert drop_line_from_program(program, 1) == program


def test_settings_merge_and_validation():
    s, warnings = Settings().merge({"cad": {"maxNewTokens": 48, "strategy": "regen", "bogus": 1}}, source="init")
    assert (s.max_new_tokens, s.strategy) == (48, "regen") and "bogus" in warnings[0]
    with pytest.raises(SettingsError, match="resolverMode"):
        Settings().merge({"resolverMode": "loose"}, source="cfg")
    with pytest.raises(SettingsError, match="positive integer"):
        Settings().merge({"maxNewTokens": 0}, source="cfg")
    with pytest.raises(SettingsError, match="strategy"):
        Settings().merge({"strategy": "magic"}, source="cfg")
    assert Settings().gen_drafter == "replaced-lines"  # the default: gen bodies drafted from the lines they replace
    s, _ = Settings().merge({"cad": {"genDrafter": "pld"}}, source="cfg")
    assert s.gen_drafter == "pld"
    with pytest.raises(SettingsError, match="genDrafter.*none, pld"):  # choices from engine.api.DRAFTERS
        Settings().merge({"genDrafter": "magic"}, source="cfg")
    assert Settings().snippet_merge is True
    s, _ = Settings().merge({"cad": {"snippetMerge": False}}, source="cfg")
    assert s.snippet_merge is False
    with pytest.raises(SettingsError, match="snippetMerge.*true or false"):
        Settings().merge({"snippetMerge": "off"}, source="cfg")
    assert Settings().draft_model is None
    s, _ = Settings().merge({"draftModel": "default+none"}, source="cfg")
    assert s.draft_model == "default+none" and s.merge({"draftModel": ""}, source="cfg")[0].draft_model is None
    with pytest.raises(SettingsError, match="draftModel.*model spec"):
        Settings().merge({"draftModel": 3}, source="cfg")


def test_parse_edit_args_shapes():
    args = parse_edit_args("cad.applyEdit", [{"uri": "file:///a", "instruction": "x",
                                              "range": {"start": {"line": 1, "character": 0},
                                                        "end": {"line": 2, "character": 0}}}])
    assert args.range.start.line == 1 and args.instruction == "x"
    with pytest.raises(CommandArgumentError, match="uri"):
        parse_edit_args("cad.applyEdit", [{"instruction": "x"}])
    with pytest.raises(CommandArgumentError, match="range"):
        parse_edit_args("cad.applyEdit", [{"uri": "u", "range": {"start": {"line": -1, "character": 0}}}])
    with pytest.raises(CommandArgumentError, match="one object"):
        parse_edit_args("cad.applyEdit", [])


def test_unified_diff():
    assert unified_diff("a\nb\n", "a\nb\n", "file:///x") == ""
    diff = unified_diff("a\nb\n", "a\nc\n", "file:///x")
    assert diff.startswith("--- a/file:///x\n+++ b/file:///x\n") and "-b\n+c\n" in diff


class _FakeEngine:
    """Decodes nothing: waits on a gate, reports progress, honours cancel within one 'forward'."""

    loads = 0

    def __init__(self, model, device, on_status):
        self.loaded = False
        self.gate = threading.Event()

    def load(self):
        _FakeEngine.loads += 1
        self.loaded = True

    def edit(self, request, *, cancel=None, progress=None):
        for step in range(1000):
            if cancel is not None and cancel.is_set():
                raise EditCancelled(f"cancelled after {step} forwards")
            if progress:
                progress(Progress(step, 0, 0, step, 0))
            if self.gate.wait(0.01):
                return request.instruction
        raise AssertionError("gate never opened")


def test_worker_serialises_reports_positions_and_cancels():
    engines = []

    def factory(model, device, on_status):
        engines.append(_FakeEngine(model, device, on_status))
        return engines[-1]

    worker = EngineWorker(factory)
    positions: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    started = threading.Event()
    jobs = {}
    for name in "abc":
        jobs[name] = EditJob(EditRequest("doc", name), on_position=positions[name].append,
                             on_start=started.set if name == "a" else None)
        worker.submit(jobs[name])
    assert started.wait(10)
    assert positions["a"] == [1] and positions["b"][0] == 2 and positions["c"][0] == 3
    jobs["b"].cancel.set()  # cancelled while queued: never reaches the engine
    engines[0].gate.set()
    assert jobs["a"].future.result(10) == "a"
    with pytest.raises(EditCancelled):
        jobs["b"].future.result(10)
    assert jobs["c"].future.result(10) == "c"
    assert positions["c"][0] == 3 and positions["c"][-1] == 2  # moved up when "a" finished
    assert len(engines) == 1 and engines[0].loaded  # one engine, loaded once
    engines[0].gate.clear()
    running_started = threading.Event()
    running = EditJob(EditRequest("doc", "d"), on_start=running_started.set)
    worker.submit(running)
    assert running_started.wait(10)
    assert worker.cancel_all() == 1
    with pytest.raises(EditCancelled, match="forwards"):
        running.future.result(10)
    worker.stop()


def test_the_worker_builds_one_engine_per_model_device_and_draft_model():
    from cad_lsp.worker import EditJob, EngineWorker

    made = []

    class Engine:
        loaded = True

    def factory(model, device, on_status, **draft):
        made.append((model, device, draft))
        return Engine()

    worker = EngineWorker(factory)
    first = worker._engine_for(EditJob(None, model="big"))
    assert worker._engine_for(EditJob(None, model="big")) is first
    worker._engine_for(EditJob(None, model="big", draft_model="small"))
    assert made == [("big", "auto", {}), ("big", "auto", {"draft_model": "small"})]


def test_a_warm_up_runs_on_the_engine_of_its_model_device_and_draft_model():
    from cad_lsp.worker import EditJob, EngineWorker, WarmJob

    warmed = []

    class Engine:
        loaded = True

        def warm(self, document, strategy, cancel=None):
            warmed.append(document)
            return "warm"

    worker = EngineWorker(lambda model, device, on_status, **draft: Engine())
    worker._engine_for(EditJob(None, model="big", draft_model="small"))
    done = []
    worker._run_warm(WarmJob("doc", model="big", draft_model="small", on_done=done.append))
    worker._run_warm(WarmJob("other", model="big", on_done=done.append))   # another engine's job: skipped
    assert warmed == ["doc"] and done == ["warm", None]
