"""Full regeneration: forced mode reproduces gold, spec-edit/pld match regen token for token."""
from __future__ import annotations

import dataclasses
import threading

import pytest

from evaluation.corpus import load_pairs
from engine.errors import ContextOverflowError, EditCancelled
from engine.program.resolver import resolve


@pytest.fixture(scope="module")
def tiny():
    from engine.backends.model import tiny_random_model

    return tiny_random_model(seed=1)


@pytest.fixture(scope="module")
def short_pairs():
    pairs = load_pairs("python") + load_pairs("js")
    return sorted(pairs, key=lambda p: len(p.gold))[:4]


def test_forced_regen_reproduces_gold_one_forward_per_token(tiny, short_pairs):
    from engine.decode.regen import regenerate

    for pair in short_pairs:
        r = regenerate(tiny, pair.document, pair.instruction, drafter="none", forced=pair.gold)
        assert r.text == pair.gold
        assert resolve(r.program, pair.document).text == pair.gold
        assert r.stats.forced_tokens == len(r.output_ids) == r.stats.forwards
        assert r.stats.decoded_tokens == r.stats.copied_tokens == 0 and not r.stats.truncated
        assert r.stopped_by == "end"


def test_forced_spec_edit_same_text_far_fewer_forwards(tiny, short_pairs):
    from engine.decode.regen import regenerate

    for pair in short_pairs:
        reg = regenerate(tiny, pair.document, pair.instruction, drafter="none", forced=pair.gold)
        for window in (16, 32, 64):
            spec = regenerate(tiny, pair.document, pair.instruction, drafter="spec-edit",
                              forced=pair.gold, window=window)
            assert spec.text == pair.gold and spec.output_ids == reg.output_ids
            assert spec.stats.copied_tokens + spec.stats.forced_tokens == len(spec.output_ids)
            assert spec.stats.copied_tokens > 0
            assert spec.stats.forwards < reg.stats.forwards / 2


def test_free_strategies_identical_on_tiny_model(tiny, short_pairs):
    from engine.decode.regen import regenerate

    pair = short_pairs[0]
    outs = {s: regenerate(tiny, pair.document, pair.instruction, drafter=d, max_new_tokens=40)
            for s, d in (("regen", "none"), ("spec-edit", "spec-edit"), ("pld", "pld"))}
    assert outs["regen"].output_ids == outs["spec-edit"].output_ids == outs["pld"].output_ids
    assert outs["regen"].stats.truncated and outs["regen"].warnings
    assert "max_new_tokens" in outs["regen"].warnings[0]


def test_context_overflow_suggests_range(tiny, short_pairs):
    from engine.decode.regen import regenerate

    small = dataclasses.replace(tiny, context_length=64)
    with pytest.raises(ContextOverflowError, match="range"):
        regenerate(small, short_pairs[0].document, "Fix it.", max_new_tokens=16)


def test_cancel_maps_to_edit_cancelled(tiny, short_pairs):
    from engine.decode.regen import regenerate

    cancel = threading.Event()
    seen = []

    def on_forward(stats):
        seen.append(stats.forwards)
        if stats.forwards == 3:
            cancel.set()

    with pytest.raises(EditCancelled):
        regenerate(tiny, short_pairs[0].document, "Fix it.", max_new_tokens=50, cancel=cancel,
                   on_forward=on_forward)
    assert seen == [1, 2, 3]


def test_unknown_drafter(tiny):
    from engine.decode.regen import regenerate

    seen = []
    with pytest.raises(ValueError, match="spec-edit"):  # the message names the registered drafters
        regenerate(tiny, "x = 1\n", "Fix it.", drafter="medusa", on_forward=seen.append)
    assert seen == []  # refused before any forward


def test_strategy_registry_names_each_regen_drafter():
    from engine.drafters import DRAFTERS
    from engine.strategies import REGISTRY

    regen = {s.name: s.drafter for s in REGISTRY.values() if s.family == "regen"}
    assert regen == {"regen": "none", "spec-edit": "spec-edit"}
    assert set(regen.values()) <= set(DRAFTERS)


@pytest.mark.real_model
def test_real_model_spec_edit_and_pld_lossless(real_model, short_pairs):
    """On the real model, spec-edit and pld emit exactly regen's tokens, in fewer forwards."""
    from engine.decode.regen import regenerate

    for pair in short_pairs[:2]:
        reg = regenerate(real_model, pair.document, pair.instruction, drafter="none", max_new_tokens=64)
        for strategy in ("spec-edit", "pld"):
            got = regenerate(real_model, pair.document, pair.instruction, drafter=strategy,
                             max_new_tokens=64)
            assert got.output_ids == reg.output_ids, (pair.task_id, strategy)
            assert got.text == reg.text
            assert got.stats.copied_tokens + got.stats.decoded_tokens == len(got.output_ids)
            assert got.stats.forwards <= reg.stats.forwards
        assert resolve(reg.program, pair.document).text == reg.text


def test_end_detector_drops_tokens_committed_past_the_marker(tiny):
    from engine.decode.regen import _end_detector

    tok = tiny.tokenizer
    ids = tok.encode("x = 1\n</document>\nmore text after", add_special_tokens=False)
    stop_when = _end_detector(tok, "\n</document>")
    keep = stop_when(ids)
    assert keep is not None and keep < len(ids)
    assert "\n</document>" in tok.decode(ids[:keep]) and "\n</document>" not in tok.decode(ids[:keep - 1])
    assert _end_detector(tok, "\n</document>")(ids[:3]) is None
