"""Strategy ``auto`` (engine.picker): the cost model, the choice, and what an edit with it reports."""
from __future__ import annotations

import dataclasses

import pytest

from engine import picker
from engine.api import EditEngine, EditRequest
from engine.backends.prefix_cache import PrefixCache
from engine.picker import CANDIDATES, ForwardCost, candidates_for, choose, pick, predict
from engine.warmup import instruction_free_prefix, warm_document

@pytest.fixture(autouse=True)
def own_cache_dir(tmp_path, monkeypatch):
    """Calibrations are kept in the user cache directory: here, a fresh one per test."""
    monkeypatch.setenv("CAD_CACHE_DIR", str(tmp_path))
    return tmp_path


DOC = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(12))


def test_fit_recovers_the_cost_of_known_forwards():
    true = ForwardCost(fixed_ms=40.0, token_ms=1.5, attend_ms=0.8)
    samples = [(n, ctx, true.ms(n, ctx)) for n, ctx in [(1, 1), (16, 1), (128, 1), (512, 1), (16, 513), (128, 529)]]
    got = picker._fit(samples)
    for field in ("fixed_ms", "token_ms", "attend_ms"):
        assert getattr(got, field) == pytest.approx(getattr(true, field), rel=1e-6)
    assert true.ms(0, 100) == 0.0 and true.ms(64, 2000) > true.ms(64, 0) > true.ms(1, 0)


def test_choose_takes_the_fastest_and_gives_a_tie_to_cad():
    assert choose({"cad": 900.0, "spec-edit": 1000.0}) == "cad"
    assert choose({"cad": 1040.0, "spec-edit": 1000.0}) == "cad"          # within 5%: cad
    assert choose({"cad": 1200.0, "spec-edit": 1000.0}) == "spec-edit"
    assert choose({"cad": 5.0}) == "cad"


def test_candidates_follow_what_the_weights_can_write(tiny_model):
    assert candidates_for(tiny_model) == (CANDIDATES, "")                 # a base model: both
    programs_only = dataclasses.replace(tiny_model, prompt_profile="short")
    allowed, why = candidates_for(programs_only)
    assert allowed == ("cad",) and "edit programs only" in why

    class Remote:   # a serving engine: no in-process forwards to model
        prompt_profile = "teach"
    assert candidates_for(Remote())[0] == ("cad",)


def test_long_documents_cost_more_and_short_prompts_less(tiny_model):
    cost = ForwardCost(fixed_ms=50.0, token_ms=1.2, attend_ms=1.0)
    short = predict(tiny_model, DOC[:200], "Fix f1.", window=64, cost=cost)
    long = predict(tiny_model, DOC, "Fix f1.", window=64, cost=cost)
    assert set(short) == {"cad", "spec-edit"}
    assert all(long[name] > short[name] > 0 for name in short)
    # a GPU-like curve (forwards cost the same whatever their size): CaD's few forwards win a long document
    flat = ForwardCost(fixed_ms=15.0, token_ms=0.0)
    assert choose(predict(tiny_model, DOC * 4, "Fix f1.", window=16, cost=flat)) == "cad"


def test_a_cached_prompt_makes_its_strategy_cheaper(tiny_model):
    cost = ForwardCost(fixed_ms=50.0, token_ms=1.2, attend_ms=1.0)
    model = dataclasses.replace(tiny_model, prefix_cache=PrefixCache())
    cold = predict(model, DOC, "Fix f1.", window=64, cost=cost)
    assert warm_document(model, DOC, "spec-edit").status == "warm"
    warm = predict(model, DOC, "Fix f1.", window=64, cost=cost)
    assert warm["spec-edit"] < cold["spec-edit"] and warm["cad"] == cold["cad"]


def test_auto_edit_runs_the_picked_strategy_and_says_so(tiny_model, monkeypatch):
    outputs = set()
    for forced in ("spec-edit", "cad"):
        monkeypatch.setattr(picker, "choose", lambda predicted, forced=forced: forced)
        engine = EditEngine(tiny_model, prefix_cache=False)
        auto = engine.edit(EditRequest(DOC, "Fix f1.", strategy="auto", max_new_tokens=12))
        direct = engine.edit(EditRequest(DOC, "Fix f1.", strategy=forced, max_new_tokens=12))
        assert auto.stats.picked == forced and set(auto.stats.predicted_ms) == set(CANDIDATES)
        assert auto.text == direct.text and auto.program == direct.program
        assert direct.stats.picked == "" and direct.stats.predicted_ms == {}
        outputs.add((direct.text, direct.program))
    assert len(outputs) == 2   # the two strategies write different edits here, so the check above can fail


def test_auto_on_weights_trained_for_programs_is_cad_without_calibrating(tiny_model, monkeypatch):
    monkeypatch.setattr(picker, "calibrate", lambda loaded: pytest.fail("nothing to choose: no calibration"))
    model = dataclasses.replace(tiny_model, prompt_profile="short")
    got = pick(model, DOC, "Fix f1.", window=32)
    assert got.strategy == "cad" and got.predicted_ms == {} and "programs only" in got.describe()
    result = EditEngine(model, prefix_cache=False).edit(EditRequest(DOC, "Fix f1.", strategy="auto", max_new_tokens=8))
    assert result.stats.picked == "cad"
    warmed = warm_document(dataclasses.replace(model, prefix_cache=PrefixCache()), DOC, "auto")
    assert warmed.prompt_tokens == len(instruction_free_prefix(model, DOC, "cad"))


def test_a_range_scoped_auto_edit_weighs_the_range(tiny_model, monkeypatch):
    seen = []
    real_predict = picker.predict
    monkeypatch.setattr(picker, "predict", lambda loaded, document, *a, **k: seen.append(document) or
                        real_predict(loaded, document, *a, **k))
    engine = EditEngine(tiny_model, prefix_cache=False)
    result = engine.edit(EditRequest(DOC, "Fix f1.", strategy="auto", line_range=(4, 6), max_new_tokens=8))
    assert seen == ["\n".join(DOC.split("\n")[3:6])]
    assert result.stats.picked in CANDIDATES


def test_calibration_is_measured_once_per_model_and_machine(tiny_model, own_cache_dir, monkeypatch):
    picker._calibrations.pop(tiny_model.model, None)
    first = picker.calibrate(tiny_model)
    assert picker.calibrate(tiny_model) is first
    assert first.fixed_ms >= 0 and first.token_ms >= 0 and first.attend_ms >= 0
    assert (own_cache_dir / picker.CALIBRATION_FILE).is_file()
    # a new process (nothing in memory) takes the kept fit instead of measuring again
    picker._calibrations.pop(tiny_model.model, None)
    monkeypatch.setattr(picker, "measure_forward_cost", lambda loaded: pytest.fail("measured again"))
    assert picker.calibrate(tiny_model) == first


def test_a_damaged_calibration_file_is_measured_again(tiny_model, own_cache_dir):
    (own_cache_dir / picker.CALIBRATION_FILE).write_text("{not json")
    picker._calibrations.pop(tiny_model.model, None)
    assert picker.calibrate(tiny_model).token_ms >= 0
    assert picker._load_fit(picker._machine_key(tiny_model)) is not None   # rewritten whole
