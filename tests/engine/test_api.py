"""engine.api: lazy loading, validation, range scoping, cancellation, progress, real-model edits."""
from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.api import (
    STRATEGIES, ContextOverflowError, EditCancelled, EditEngine, EditRequest, EditResult, EngineError,
    InvalidRangeError, InvalidRequestError, PastedChangeError, Progress, UnknownStrategyError,
)
from engine.program.grammar import CopyLines, Gen
from engine.program.resolver import resolve
from engine.program.scope import rebase_program, slice_lines, splice_text

REPO = Path(__file__).resolve().parents[2]
DOC = "".join(f"line_{i} = {i}\n" for i in range(1, 9))     # 8 lines + final empty line (n = 9)


def test_constructing_engine_does_not_import_torch():
    code = (
        "import sys; from engine.api import EditEngine, EditRequest; e = EditEngine(); "
        "assert not e.loaded; "
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]; "
        "assert not bad, bad; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("fields, error, words", [
    (dict(strategy="medusa"), UnknownStrategyError, "cad, cad-tokens, regen, spec-edit"),
    (dict(line_range=(0, 2)), InvalidRangeError, "1..9"),
    (dict(line_range=(5, 2)), InvalidRangeError, "first <= last"),
    (dict(line_range=(1, 10)), InvalidRangeError, "outside"),
    (dict(line_range=(1,)), InvalidRangeError, "pair"),
    (dict(mode="lenient"), InvalidRequestError, "strict"),
    (dict(max_new_tokens=0), InvalidRequestError, "max_new_tokens"),
    (dict(instruction="  "), InvalidRequestError, "instruction"),
    (dict(gen_drafter="medusa"), InvalidRequestError, "none, pld, spec-edit"),
    (dict(snippet_merge="yes"), InvalidRequestError, "snippet_merge"),
])
def test_invalid_requests_fail_before_loading(fields, error, words):
    engine = EditEngine()
    args = dict(document=DOC, instruction="Fix it.") | fields
    with pytest.raises(error, match=words) as info:
        engine.edit(EditRequest(**args))
    assert isinstance(info.value, EngineError)
    assert not engine.loaded


def test_gen_drafter_choices_come_from_the_drafter_registry():
    from engine.api import DRAFTERS
    from engine.drafters import REGISTRY

    assert DRAFTERS == tuple(REGISTRY) and DRAFTERS[0] == "none"
    with pytest.raises(InvalidRequestError, match="gen_drafter"):
        EditEngine(gen_drafter="medusa")


def test_load_is_idempotent_and_thread_safe(monkeypatch):
    import engine.backends.model

    calls = []
    barrier = threading.Barrier(4)

    def fake_load(spec, device, progress=None):
        calls.append(spec)
        return object()

    monkeypatch.setattr(engine.backends.model, "load_model", fake_load)
    eng = EditEngine("some-spec")

    def worker():
        barrier.wait()
        eng.load()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.load()
    assert calls == ["some-spec"] and eng.loaded


def test_rebase_program_matches_splice_on_random_programs():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 12)
        doc = "\n".join(rng.choice(["a", "b", "", "c\r", "dd"]) + str(i) for i in range(n))
        a = rng.randint(1, n)
        b = rng.randint(a, n)
        sub = slice_lines(doc, a, b)
        m = len(sub.split("\n"))
        prog = []
        for _ in range(rng.randint(0, 4)):
            if rng.random() < 0.5:
                i = rng.randint(1, m)
                prog.append(CopyLines(i, rng.randint(i, m)))
            else:
                prog.append(Gen(rng.choice(["", "\nnew\n", "x", "\n\n"])))
        sub_text = resolve(tuple(prog), sub).text if prog else ""
        full = rebase_program(tuple(prog), a, b, n, m)
        expected = splice_text(doc, a, b, sub_text)
        assert resolve(full, doc, "strict").text == expected
        lines, new_lines = doc.split("\n"), expected.split("\n")
        assert new_lines[: a - 1] == lines[: a - 1]
        assert new_lines[len(new_lines) - (n - b):] == lines[b:] or b == n
        if a > 1:
            assert isinstance(full[0], CopyLines) and full[0].start == 1 and full[0].end >= a - 1
        if b < n:
            assert isinstance(full[-1], CopyLines) and full[-1].end == n and full[-1].start <= b + 1


@pytest.fixture(scope="module")
def tiny_engine():
    from engine.backends.model import tiny_random_model

    return EditEngine(tiny_random_model(seed=2))


def _drafters():
    from engine.api import DRAFTERS

    return [d for d in DRAFTERS if d != "none"]


@pytest.mark.parametrize("drafter", _drafters())
def test_request_gen_drafter_changes_forwards_never_the_edit(tiny_engine, drafter):
    """Every registered drafter, selected per request for the cad gen bodies, gives the edit of no drafter."""
    import dataclasses

    ref = tiny_engine.edit(EditRequest(DOC, "Rename line_4 to four.", max_new_tokens=48, gen_drafter="none"))
    engine = tiny_engine
    if drafter == "draft-model":   # drafts with a draft model beside the model (here: the model itself)
        engine = EditEngine(dataclasses.replace(tiny_engine.model, draft=tiny_engine.model))
    got = engine.edit(EditRequest(DOC, "Rename line_4 to four.", max_new_tokens=48, gen_drafter=drafter))
    assert (got.text, got.program, got.stats.truncated) == (ref.text, ref.program, ref.stats.truncated)


SNIPPET = "Apply this change:\n```python\n# ... existing code ...\nline_4 = 4\nline_5 = 50\nline_6 = 6\n# ... existing code ...\n```"


@pytest.mark.parametrize("line_range", [None, (3, 7)])
def test_pasted_snippet_is_merged_without_decoding(tiny_engine, line_range):
    """A snippet that anchors at one place is merged exactly, no forward; range scoping re-bases it."""
    result = tiny_engine.edit(EditRequest(DOC, SNIPPET, line_range=line_range))
    assert result.text == DOC.replace("line_5 = 5\n", "line_5 = 50\n")
    assert result.stats.planner == "snippet-merge" and result.stats.forwards == 0
    assert result.stats.speedup_estimate == 1.0   # nothing decoded: no speedup claimed
    assert resolve(result.program, DOC, "strict").text == result.text
    assert [op for op in result.program if isinstance(op, Gen)] == [Gen("\nline_5 = 50\n")]


DIFF = "Apply this patch:\n```diff\n@@ -4,3 +4,3 @@\n line_4 = 4\n-line_5 = 5\n+line_5 = 50\n line_6 = 6\n```"


@pytest.mark.parametrize("line_range", [None, (3, 7)])
def test_pasted_diff_is_applied_without_decoding(tiny_engine, line_range):
    """A unified diff is placed by its context (the line numbers of the whole file do not matter
    inside a range), exactly, no forward; the program is the oracle's, re-based."""
    result = tiny_engine.edit(EditRequest(DOC, DIFF, line_range=line_range))
    assert result.text == DOC.replace("line_5 = 5\n", "line_5 = 50\n")
    assert result.stats.planner == "patch" and result.stats.forwards == 0
    assert resolve(result.program, DOC, "strict").text == result.text
    assert [op for op in result.program if isinstance(op, Gen)] == [Gen("\nline_5 = 50\n")]
    off = tiny_engine.edit(EditRequest(DOC, DIFF, snippet_merge=False, max_new_tokens=8))
    assert off.stats.planner == "model" and off.stats.forwards > 0


def test_a_pasted_diff_that_does_not_fit_is_refused_and_says_why(tiny_engine):
    """Nothing is decoded or changed; with snippet merging off the model decodes the paste instead."""
    stale = DIFF.replace(" line_4 = 4", " line_4 = 40")
    with pytest.raises(PastedChangeError, match=r"^the pasted diff could not be applied as is: hunk 1 does not "
                                                r"fit: .*'line_4 = 40'.*Nothing was changed.*snippetMerge = false"):
        tiny_engine.edit(EditRequest(DOC, stale, max_new_tokens=8))
    result = tiny_engine.edit(EditRequest(DOC, stale, max_new_tokens=8, snippet_merge=False))
    assert result.stats.planner == "model" and result.stats.forwards > 0


def test_a_snippet_that_does_not_merge_is_decoded_once_and_says_why(tiny_engine, monkeypatch):
    """The planners are asked once per edit (not again by the runner), and their reason reaches the result."""
    import engine.edit as edit_module

    calls = []
    real = edit_module.plan_pasted
    monkeypatch.setattr(edit_module, "plan_pasted", lambda *a: calls.append(1) or real(*a))
    stray = "```python\nline_5 = 5\n# ... existing code ...\nline_3 = 3\nline_4 = 44\n```"   # its second part is above
    result = tiny_engine.edit(EditRequest(DOC, stray, max_new_tokens=8))
    assert result.stats.planner == "model" and len(calls) == 1
    assert result.warnings[0].startswith("the pasted snippet could not be applied as is: ")


def test_snippet_merge_off_decodes_with_the_model(tiny_engine):
    result = tiny_engine.edit(EditRequest(DOC, SNIPPET, snippet_merge=False, max_new_tokens=8))
    assert result.stats.planner == "model" and result.stats.forwards > 0


@pytest.mark.parametrize("strategy", ["regen", "spec-edit"])
def test_range_scoped_edit_rebases_to_full_document(tiny_engine, strategy):
    seen: list[Progress] = []
    result = tiny_engine.edit(
        EditRequest(DOC, "Rename line_4 to four.", strategy=strategy, line_range=(3, 5), max_new_tokens=24),
        progress=seen.append,
    )
    assert isinstance(result, EditResult)
    lines, new = DOC.split("\n"), result.text.split("\n")
    assert new[:2] == lines[:2] and new[-4:] == lines[-4:]     # lines 1-2 and 6-9 unchanged
    assert result.program[0] == CopyLines(1, 2) or result.program[0].start == 1
    assert result.program[-1].end == 9 and isinstance(result.program[-1], CopyLines)
    assert resolve(result.program, DOC, "strict").text == result.text
    assert seen and all(isinstance(p, Progress) for p in seen)
    assert [p.forwards for p in seen] == list(range(1, len(seen) + 1))
    assert result.stats.forwards == len(seen)
    assert result.stats.ops == len(result.program) and result.stats.wall_ms > 0


@pytest.mark.parametrize("strategy", ["regen", "spec-edit"])
def test_regenerating_with_program_only_weights_warns(strategy):
    """Weights fine-tuned on edit programs only (prompt profile 'short') never learnt to regenerate: a
    regenerating strategy still runs on them, and the result says it is unreliable and what to use."""
    import dataclasses

    from engine.backends.model import tiny_random_model

    base = tiny_random_model(seed=2)
    request = EditRequest(DOC, "Fix it.", strategy=strategy, max_new_tokens=4)
    assert not any("edit programs only" in w for w in EditEngine(base).edit(request).warnings)
    warned = EditEngine(dataclasses.replace(base, prompt_profile="short")).edit(request).warnings
    assert any("edit programs only" in w and "strategy 'cad'" in w and "default+none" in w for w in warned)
    program_edit = EditEngine(dataclasses.replace(base, prompt_profile="short")).edit(
        EditRequest(DOC, "Fix it.", strategy="cad", max_new_tokens=4))
    assert not any("edit programs only" in w for w in program_edit.warnings)


def test_cancel_from_progress_raises_edit_cancelled(tiny_engine):
    cancel = threading.Event()

    def progress(p: Progress) -> None:
        if p.forwards >= 2:
            cancel.set()

    with pytest.raises(EditCancelled):
        tiny_engine.edit(EditRequest(DOC, "Fix it.", strategy="regen", max_new_tokens=40),
                         cancel=cancel, progress=progress)
    cancel.clear()
    cancel.set()
    with pytest.raises(EditCancelled):
        tiny_engine.edit(EditRequest(DOC, "Fix it.", strategy="spec-edit"), cancel=cancel)


def test_context_overflow_names_range_scoping():
    import dataclasses

    from engine.backends.model import tiny_random_model

    small = dataclasses.replace(tiny_random_model(seed=2), context_length=80)
    with pytest.raises(ContextOverflowError, match="range"):
        EditEngine(small).edit(EditRequest(DOC * 4, "Fix it.", strategy="regen", max_new_tokens=8))


SMALL_DOC = 'def add(a, b):\n    """Add two numbers."""\n    return a - b\n'


@pytest.mark.real_model
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_real_model_edit_per_strategy(real_model, strategy):
    engine = EditEngine(real_model)
    result = engine.edit(EditRequest(SMALL_DOC, "Fix bugs in add.", strategy=strategy, max_new_tokens=40))
    assert isinstance(result.text, str) and result.program
    if strategy == "cad-tokens":  # token programs resolve in token mode against the document's ids
        from engine.decode.gen_end import decode
        from engine.prompt import document_token_ids

        tok = real_model.tokenizer
        again = resolve(result.program, SMALL_DOC, "clipped", token_ids=document_token_ids(tok, SMALL_DOC),
                        decode_tokens=lambda ids: decode(tok, ids), granularity="tokens")
    else:
        again = resolve(result.program, SMALL_DOC, "clipped")
    assert again.text == result.text
    assert result.stats.forwards >= 1 and result.stats.prompt_tokens > 0
    assert result.stats.speedup_estimate > 0


def test_demo_prints_program_diff_and_stats(tiny_engine, monkeypatch, capsys, tmp_path):
    import engine.demo as demo

    monkeypatch.setattr(demo, "EditEngine", lambda *a, **k: tiny_engine)
    assert demo.main(["--strategy", "spec-edit", "--max-new-tokens", "8"]) == 0
    out, err = capsys.readouterr()
    assert "## Program" in out and "<program>" in out and "## Diff" in out
    assert "| forwards |" in out and "[decode] forwards=1" in err
    assert "max_new_tokens" in err                     # truncation warning reaches the user
    assert demo.main(["--file", str(tmp_path / "missing.py")]) == 2
    (tmp_path / "x.py").write_text("x = 1\n")
    assert demo.main(["--file", str(tmp_path / "x.py")]) == 2          # no instruction anywhere
    assert "--instruction" in capsys.readouterr().err


def test_demo_says_a_merged_snippet_has_no_speedup_to_estimate(tiny_engine, monkeypatch, capsys):
    import engine.demo as demo

    monkeypatch.setattr(demo, "EditEngine", lambda *a, **k: tiny_engine)
    snippet = demo.EXAMPLES / "buggy_stats.snippet.md"
    assert demo.main(["--instruction", snippet.read_text()]) == 0
    out = capsys.readouterr().out
    assert "| planner | snippet-merge |" in out and "| speedup estimate | n/a (no decoding) |" in out


def test_a_pasted_change_needs_no_model():
    """An engine that has not loaded its model applies a pasted diff without loading it."""
    engine = EditEngine(model="/nonexistent/model/dir")
    result = engine.edit(EditRequest(DOC, DIFF, line_range=(2, 8)))
    assert result.text == DOC.replace("line_5 = 5\n", "line_5 = 50\n") and result.stats.planner == "patch"
    assert not engine.loaded
    with pytest.raises(PastedChangeError):
        engine.edit(EditRequest(DOC, DIFF.replace(" line_4 = 4", " line_4 = 40")))
    assert not engine.loaded


def test_a_document_far_over_the_context_is_refused_before_the_prompt_is_rendered():
    # engine.size_guard: every caller (LSP server, cad-apply) gets the cheap lower-bound refusal, which
    # blames the right input; the decoders' own check would tokenize the whole rendered prompt first.
    import dataclasses

    from engine.backends.model import tiny_random_model

    small = dataclasses.replace(tiny_random_model(seed=2), context_length=80)
    with pytest.raises(ContextOverflowError, match="document is too long .* alone takes at least"):
        EditEngine(small).edit(EditRequest(DOC * 40, "Fix it."))
    with pytest.raises(ContextOverflowError, match="instruction is too long"):
        EditEngine(small).edit(EditRequest(DOC, "please " * 400))
    with pytest.raises(ContextOverflowError, match="selected range is too long"):
        EditEngine(small).edit(EditRequest(DOC * 40, "Fix it.", line_range=(1, 3 * 40)))
