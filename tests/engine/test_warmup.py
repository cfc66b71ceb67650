"""Warm-up (engine.warmup, KVRunner.prefill, EditEngine.warm): the document's prompt is computed
before the instruction is known, and an edit afterwards decodes exactly as a cold one."""
from __future__ import annotations

import dataclasses
import threading

import pytest
import torch

from engine.api import EditEngine, EditRequest
from engine.backends.prefix_cache import PrefixCache
from engine.prompt import render_prompt, render_regen_prompt
from engine.warmup import instruction_free_prefix, warm_document

DOC = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(10))


def _cached(model, **kw):
    return dataclasses.replace(model, prefix_cache=PrefixCache(**kw))


@pytest.mark.parametrize("strategy", ["cad", "cad-tokens", "spec-edit"])
def test_the_prefix_is_where_every_instructions_prompt_starts(tiny_model, strategy):
    prefix = instruction_free_prefix(tiny_model, DOC, strategy)
    for instruction in ("Fix f3.", "fix f3", "Rename f7 to g7.", "1. add a docstring", " leading space"):
        if strategy == "spec-edit":
            ids = render_regen_prompt(DOC, instruction, tiny_model.tokenizer).ids
        else:
            ids = render_prompt(DOC, instruction, tiny_model.tokenizer, token_level=strategy == "cad-tokens",
                                profile=tiny_model.prompt_profile).ids
        assert ids[:len(prefix)] == prefix
    doc_ids = tiny_model.tokenizer.encode(DOC, add_special_tokens=False)
    assert len(prefix) > len(doc_ids)  # the whole document is in it, not just the system prompt


def test_an_edit_after_warming_feeds_only_its_instruction_and_decodes_the_same(tiny_model):
    model = _cached(tiny_model)
    result = warm_document(model, DOC, "cad", chunk_tokens=64)
    prefix = instruction_free_prefix(tiny_model, DOC, "cad")
    assert result.status == "warm" and result.computed == len(prefix) == result.prompt_tokens
    ids = render_prompt(DOC, "Fix f4.", tiny_model.tokenizer, profile=tiny_model.prompt_profile).ids
    warm, cold = model.session(), tiny_model.session()
    a, b = warm.feed(ids), cold.feed(ids)
    assert warm.log.tokens_reused == len(prefix) and warm.log.tokens_fed == len(ids) - len(prefix)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    for _ in range(6):  # greedy steps agree with a session that computed the prompt in one piece
        ta, tb = int(a[-1].argmax()), int(b[-1].argmax())
        assert ta == tb
        a, b = warm.feed([ta]), cold.feed([tb])
    again = warm_document(model, DOC, "cad")
    assert again.status == "warm" and again.computed == 0 and again.reused == len(prefix)


def test_a_changed_document_recomputes_only_from_its_first_changed_line(tiny_model):
    model = _cached(tiny_model)
    warm_document(model, DOC, "cad", chunk_tokens=64)
    edited = DOC.replace("return x + 8", "return x - 8")
    result = warm_document(model, edited, "cad", chunk_tokens=64)
    assert result.status == "warm" and 0 < result.computed < result.prompt_tokens / 3
    assert result.reused + result.computed == result.prompt_tokens


def test_a_cancel_stops_between_chunks_and_keeps_what_was_computed(tiny_model):
    model = _cached(tiny_model)
    cancel = threading.Event()
    calls = []

    def observe(ids, ms):  # cancel after the second chunk's forward
        calls.append(len(ids))
        if len(calls) == 2:
            cancel.set()

    model = dataclasses.replace(model, observers=[observe])
    result = warm_document(model, DOC, "cad", cancel=cancel, chunk_tokens=32)
    assert result.status == "cancelled" and result.computed == 64 and calls == [32, 32]
    resumed = warm_document(dataclasses.replace(model, observers=[]), DOC, "cad", chunk_tokens=32)
    assert resumed.status == "warm" and resumed.reused == 64
    assert resumed.reused + resumed.computed == resumed.prompt_tokens


def test_skipped_without_a_prefix_cache_or_when_the_prompt_cannot_be_kept(tiny_model):
    assert warm_document(tiny_model, DOC).status == "skipped"  # the tiny model keeps no cache
    small = _cached(tiny_model, max_tokens=40)
    result = warm_document(small, DOC)
    assert result.status == "skipped" and "longer than the model keeps" in result.reason
    assert small.prefix_cache.tokens == 0
    huge = warm_document(small, "x" * 10_000)
    assert huge.status == "skipped" and "characters" in huge.reason


def test_the_engine_never_loads_the_model_to_warm(tiny_model):
    engine = EditEngine("default")
    result = engine.warm(DOC)
    assert result.status == "skipped" and not engine.loaded
    engine = EditEngine(_cached(tiny_model))
    assert engine.warm(DOC, "cad").status == "warm"
    cold = EditEngine(tiny_model).edit(EditRequest(DOC, "Fix f2.", max_new_tokens=12))
    warm = engine.edit(EditRequest(DOC, "Fix f2.", max_new_tokens=12))
    assert warm.program == cold.program and warm.text == cold.text
    assert warm.stats.prompt_reused == len(instruction_free_prefix(tiny_model, DOC, "cad"))
    assert cold.stats.prompt_reused == 0
    assert engine.warm(DOC, "spec-edit").status == "warm"
    regen = engine.edit(EditRequest(DOC, "Fix f2.", strategy="spec-edit", max_new_tokens=12))
    assert regen.stats.prompt_reused == len(instruction_free_prefix(tiny_model, DOC, "spec-edit"))
    with pytest.raises(Exception, match="unknown strategy"):
        engine.warm(DOC, "no-such-strategy")
