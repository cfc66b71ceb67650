"""CopyLoop (engine.drafters.copyloop, engine.backends.shallow, engine.decode.screened).

* proposals: suffix match 4 -> 1, the most recent earlier occurrence, at most K tokens;
* shallow screening + deep continuation: the shallow readout equals an independent reference (HF's
  ``output_hidden_states`` through the final norm + lm_head), the full-depth logits equal a plain
  forward over the survivors, and every cache layer then equals the plain path's cache;
* lossless: full regeneration and the program decoder (free and forced) give the same tokens with the
  copyloop drafter, screened, as without a drafter, and screening did run and cut drafts.
"""
from __future__ import annotations

import random

import pytest
import torch

from engine.backends.shallow import screened_feed, supports
from engine.decode.generate import generate
from engine.decode.program import decode_program
from engine.decode.regen import regenerate
from engine.drafters import DRAFTERS, make_proposer
from engine.drafters.copyloop import CopyLoopProposer, calibrated_defaults, latest_match
from engine.program.oracle import line_program
from evaluation.corpus import load_pairs

LAYERS = 6


@pytest.fixture(scope="module")
def deep_tiny(make_tiny_model, real_tokenizer):
    return make_tiny_model(real_tokenizer, layers=LAYERS, seed=3)


@pytest.fixture(scope="module")
def looping_tiny(make_tiny_model, real_tokenizer):
    """Small init (greedy settles into repeating itself, so copied drafts are accepted) and layers >= 3
    that write nothing to the residual stream: screening at depth 2 cuts some drafts, and the
    survivors are partly accepted at full depth."""
    loaded = make_tiny_model(real_tokenizer, layers=LAYERS, seed=1, init_range=0.05)
    with torch.no_grad():
        for layer in loaded.model.model.layers[3:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    return loaded


@pytest.fixture(params=["deep_tiny", "looping_tiny"])
def tiny6(request):
    return request.getfixturevalue(request.param)


def test_registered_with_calibrated_defaults():
    assert "copyloop" in DRAFTERS
    p = make_proposer("copyloop", document_ids=[1, 2], window=99)
    assert isinstance(p, CopyLoopProposer)
    assert (p.tail, p.screen_depth) == (calibrated_defaults()["tail"], calibrated_defaults()["screen_depth"])
    with pytest.raises(ValueError):
        CopyLoopProposer(tail=0)


def test_proposals_longest_suffix_most_recent_occurrence_at_most_k():
    p = CopyLoopProposer(tail=3, screen_depth=0)
    context = [1, 2, 3, 4, 50, 51, 52, 53, 9, 2, 3, 4, 60, 61, 62, 63]
    # the 3-gram 2,3,4 occurs twice: the most recent occurrence wins, K = 3 tokens follow it
    assert p.propose(context, [2, 3, 4]) == [60, 61, 62]
    # a 4-gram match beats a more recent shorter one
    assert p.propose(context, [1, 2, 3, 4]) == [50, 51, 52]
    # only the last token matches: the latest earlier 9
    assert p.propose(context + [7], [9]) == [2, 3, 4]
    # the generated text already appended to the context (gen bodies) is not counted twice
    assert p.propose(context + [2, 3, 4], [2, 3, 4]) == [60, 61, 62]
    assert p.propose(context, [77]) == [] and p.propose(context, []) == []
    assert latest_match([5, 6, 5, 6], [5, 6], 3) == 2 and latest_match([5, 6], [7], 1) == -1


def _shallow_reference(model, ids, depth):
    """Argmax of norm + lm_head over layer ``depth - 1``'s output, by HF's own forward (no cache)."""
    out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    return model.lm_head(model.model.norm(out.hidden_states[depth]))[0].argmax(-1).tolist()


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_screen_then_depth_equals_a_plain_forward_and_the_same_cache(deep_tiny, depth):
    model, rng = deep_tiny.model, random.Random(depth)
    prompt = [rng.randrange(100, 5000) for _ in range(30)]
    # a draft the shallow readout agrees with (built from the reference), then one it rejects at 3
    agree = list(prompt)
    with torch.inference_mode():
        for _ in range(5):
            agree.append(_shallow_reference(model, agree, depth)[-1])
    survive = agree[len(prompt) - 1:]            # pending id + 5 agreeing draft tokens
    wrong = survive[:4] + [(survive[4] + 1) % 5000] + survive[5:]
    for ids, expect in ((survive, 6), (wrong, 4)):
        plain, screened = deep_tiny.session(), deep_tiny.session()
        for r in (plain, screened):
            r.feed(prompt[:-1], keep=1)
        assert supports(screened, depth) and not supports(screened, LAYERS) and not supports(screened, 0)
        got = screened_feed(screened, ids, keep=len(ids), first=1, depth=depth)
        assert screened.length == len(prompt) - 1 + expect and got.shape[0] == expect
        want = plain.feed(ids[:expect], keep=expect)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        assert screened.ids == plain.ids
        for a, b in zip(screened.cache.layers, plain.cache.layers):
            assert a.keys.shape == b.keys.shape
            torch.testing.assert_close(a.keys, b.keys, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(a.values, b.values, rtol=1e-4, atol=1e-5)


@pytest.fixture
def spy(monkeypatch):
    """Counts screened forwards and the draft tokens screening cut."""
    import engine.backends.shallow as shallow

    seen = {"calls": 0, "cut": 0}
    real = shallow.screened_feed

    def counting(runner, ids, *, keep, first, depth):
        logits = real(runner, ids, keep=keep, first=first, depth=depth)
        seen["calls"] += 1
        seen["cut"] += keep - logits.shape[0]
        return logits

    monkeypatch.setattr(shallow, "screened_feed", counting)
    return seen


def test_generate_screened_keeps_tokens_and_cache_of_unscreened(looping_tiny, spy):
    rng = random.Random(0)
    text = [rng.randrange(100, 3000) for _ in range(12)]
    prompt = text * 3 + text[:4]                     # repeats, so proposals exist
    runs = {}
    for depth in (0, 2):
        runner = looping_tiny.session()
        gen = generate(runner, list(prompt), max_new_tokens=40, proposer=CopyLoopProposer(tail=8, screen_depth=depth),
                       context_ids=list(prompt))
        runs[depth] = gen, runner
    plain = generate(looping_tiny.session(), list(prompt), max_new_tokens=40)
    assert runs[0][0].ids == runs[2][0].ids == plain.ids
    assert runs[2][0].stats.draft_accepted > 0 and runs[2][0].stats.forwards < plain.stats.forwards
    (_, a), (_, b) = runs[0], runs[2]
    assert a.ids == b.ids
    for x, y in zip(a.cache.layers, b.cache.layers):
        torch.testing.assert_close(x.keys, y.keys, rtol=1e-4, atol=1e-5)
    assert spy["calls"] > 0 and spy["cut"] > 0


def _pairs():
    return sorted(load_pairs("python"), key=lambda p: len(p.document))[:3]


def test_regeneration_lossless_screened(tiny6, spy):
    for pair in _pairs():
        ref = regenerate(tiny6, pair.document, pair.instruction, max_new_tokens=48)
        got = regenerate(tiny6, pair.document, pair.instruction, max_new_tokens=48,
                         drafter=CopyLoopProposer(tail=8, screen_depth=2))
        assert got.output_ids == ref.output_ids and got.text == ref.text, pair.task_id
        forced_ref = regenerate(tiny6, pair.document, pair.instruction, forced=pair.gold)
        forced = regenerate(tiny6, pair.document, pair.instruction, forced=pair.gold,
                            drafter=CopyLoopProposer(tail=8, screen_depth=2))
        assert forced.output_ids == forced_ref.output_ids and forced.text == pair.gold
    assert spy["calls"] > 0 and spy["cut"] > 0


def test_program_decoder_lossless_screened(tiny6, spy):
    for pair in _pairs():
        for ride in (True, False):   # without ride-along the next row is ready: the draft's first token is decided
            ref = decode_program(tiny6, pair.document, pair.instruction, max_new_tokens=48, ride_along=ride)
            got = decode_program(tiny6, pair.document, pair.instruction, max_new_tokens=48, ride_along=ride,
                                 drafter=CopyLoopProposer(tail=8, screen_depth=3))
            assert got.output_ids == ref.output_ids and got.text == ref.text, (pair.task_id, ride)
        program = line_program(pair.document, pair.gold)
        forced_ref = decode_program(tiny6, pair.document, pair.instruction, forced=program)
        forced = decode_program(tiny6, pair.document, pair.instruction, forced=program,
                                drafter=CopyLoopProposer(tail=8, screen_depth=3))
        assert forced.output_ids == forced_ref.output_ids and forced.text == forced_ref.text == pair.gold
    assert spy["calls"] > 0
