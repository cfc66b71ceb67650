"""Prefix KV cache across edits (engine.backends.prefix_cache): reuse, correctness, bounds."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from engine.backends.prefix_cache import PrefixCache
from engine.prompt import render_prompt

DOC = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(12))


def _logits(model, ids, keep=1):
    return model.session().feed(ids, keep=keep)


def _cached(model, cache):
    return dataclasses.replace(model, prefix_cache=cache)


def test_second_edit_of_the_same_document_reuses_everything_before_the_instruction(tiny_model):
    tok = tiny_model.tokenizer
    first = render_prompt(DOC, "Fix f3.", tok, profile="short").ids
    second = render_prompt(DOC, "Rename f7 to g7.", tok, profile="short").ids
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    model = _cached(tiny_model, PrefixCache())
    model.session().feed(first)
    session = model.session()
    got = session.feed(second, keep=2)
    assert session.log.tokens_reused == shared and session.log.tokens_fed == len(second) - shared
    assert session.length == len(second) and session.ids == second
    torch.testing.assert_close(got, _logits(tiny_model, second, keep=2), rtol=1e-4, atol=1e-4)


def test_a_changed_document_reuses_only_the_lines_before_the_change(tiny_model):
    tok = tiny_model.tokenizer
    edited = DOC.replace("return x + 9", "return x - 9")
    before = render_prompt(DOC, "Fix f9.", tok, profile="short").ids
    after = render_prompt(edited, "Fix f9.", tok, profile="short").ids
    shared = next(i for i, (a, b) in enumerate(zip(before, after)) if a != b)
    model = _cached(tiny_model, PrefixCache())
    model.session().feed(before)
    session = model.session()
    session.feed(after)
    assert session.log.tokens_reused == shared < len(after)


def test_decoding_after_a_hit_continues_exactly_like_a_cold_session(tiny_model):
    """Greedy steps after a reused prefix pick the same tokens as a session that computed it all."""
    ids = render_prompt(DOC, "Fix f1.", tiny_model.tokenizer, profile="short").ids
    model = _cached(tiny_model, PrefixCache())
    model.session().feed(ids[:-5])
    warm, cold = model.session(), tiny_model.session()
    a, b = warm.feed(ids), cold.feed(ids)
    assert warm.log.tokens_reused == len(ids) - 5
    for _ in range(8):
        ta, tb = int(a[-1].argmax()), int(b[-1].argmax())
        assert ta == tb
        a, b = warm.feed([ta]), cold.feed([tb])
    warm.crop(len(ids))  # rolling back after a hit works on the restored cache too
    assert warm.length == len(ids)


def test_the_whole_prompt_cached_still_feeds_enough_positions_for_keep(tiny_model):
    ids = render_prompt(DOC, "Fix f2.", tiny_model.tokenizer, profile="short").ids
    model = _cached(tiny_model, PrefixCache())
    model.session().feed(ids)
    session = model.session()
    out = session.feed(ids, keep=3)
    assert out.shape[0] == 3 and session.log.tokens_fed == 3 and session.log.tokens_reused == len(ids) - 3


def test_bounded_memory_least_recently_used_first_and_short_prompts_not_kept(tiny_model):
    cache = PrefixCache(max_tokens=250, min_tokens=32)
    model = _cached(tiny_model, cache)
    base = list(range(1000, 1100))
    prompts = [[7 + k] + base for k in range(4)]  # 101 ids each, no shared prefix between them
    for ids in prompts:
        model.session().feed(ids)
    assert cache.tokens <= 250
    assert cache.lookup(prompts[0], limit=100) is None            # evicted (oldest)
    assert cache.lookup(prompts[3], limit=100).length == 100       # newest kept
    model.session().feed(list(range(2000, 2010)))                 # below min_tokens: not stored
    assert cache.lookup(list(range(2000, 2010)), limit=9) is None
    model.session().feed(prompts[3] + [5, 6])                      # extends an entry: replaces it
    assert cache.tokens <= 250 and len(cache._entries) == 2


def test_invalid_bounds_are_refused():
    with pytest.raises(ValueError):
        PrefixCache(max_tokens=0)


def test_engine_that_loads_its_model_keeps_a_prefix_cache_and_edits_the_same(real_model):
    """EditEngine("default") turns the cache on; a second edit of the same document reuses its
    prompt up to the instruction and produces exactly what a cold model produces."""
    from engine.api import EditEngine, EditRequest

    doc = "def mean(xs):\n    return sum(xs) / len(xs) + 1\n\n\ndef total(xs):\n    return sum(xs)\n"
    engine = EditEngine("default", "cpu")
    cold = EditEngine(real_model)  # a LoadedModel passed in keeps its own setting: no cache
    engine.edit(EditRequest(doc, "Fix mean."))
    second = EditRequest(doc, "Rename total to grand_total.")
    warm_result = engine.edit(second)
    cache = engine.model.prefix_cache
    assert cache is not None and cache.hits >= 1 and cache.tokens_reused > 40
    assert real_model.prefix_cache is None
    cold_result = cold.edit(second)
    assert warm_result.program == cold_result.program and warm_result.text == cold_result.text
