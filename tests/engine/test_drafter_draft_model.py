"""The "draft-model" drafter (engine.drafters.draft_model): a smaller model of the same tokenizer drafts,
the target verifies; lossless in gen bodies, regeneration and as SwitchSD's neural drafter below its gate.

Tiny random models stand in for both (a draft identical to the target is accepted in full; another one
is accepted sometimes; the output is the target's greedy output either way).
"""
from __future__ import annotations

import dataclasses
import types

import pytest

from engine.api import EditEngine, EditRequest, InvalidRequestError, ModelLoadError
from engine.decode.program import decode_program
from engine.decode.regen import regenerate
from engine.drafters import DRAFTERS, make_proposer
from engine.drafters.draft_model import DraftModelProposer, check_draft_compatible
from engine.drafters.switchsd import SwitchSDProposer
from evaluation.corpus import load_pairs


@pytest.fixture(scope="module")
def other_tiny(real_tokenizer, make_tiny_model):
    return make_tiny_model(real_tokenizer, seed=7)


def _pair():
    return sorted(load_pairs("python"), key=lambda p: len(p.document))[0]


def test_registered_and_needs_a_draft(tiny_model):
    assert "draft-model" in DRAFTERS
    p = make_proposer("draft-model", document_ids=[], draft=tiny_model, draft_window=3)
    assert isinstance(p, DraftModelProposer) and p.window == 3
    with pytest.raises(ValueError, match="needs a draft model"):
        make_proposer("draft-model", document_ids=[])


def test_draft_session_follows_the_context_across_rounds(tiny_model):
    p = DraftModelProposer(tiny_model, window=4)
    first = p.propose([5, 6, 7], [])
    assert len(first) == 4 and p.counts["draft_forwards"] == 4
    # the target kept two draft tokens and chose its own third: the draft crops to the shared ids
    second = p.propose([5, 6, 7], [*first[:2], 11])
    assert len(second) == 4 and p._session.ids[:6] == [5, 6, 7, *first[:2], 11]
    assert p.propose([5, 6, 7], []) == first, "the same context drafts the same tokens"


@pytest.mark.parametrize("same", [True, False], ids=["draft-is-target", "other-draft"])
def test_lossless_in_gen_bodies_and_regeneration(tiny_model, other_tiny, same):
    pair = _pair()
    draft = tiny_model if same else other_tiny
    ref = decode_program(tiny_model, pair.document, pair.instruction, max_new_tokens=40)
    got = decode_program(tiny_model, pair.document, pair.instruction, max_new_tokens=40,
                         drafter=DraftModelProposer(draft))
    assert got.output_ids == ref.output_ids
    ref = regenerate(tiny_model, pair.document, pair.instruction, max_new_tokens=40)
    p = DraftModelProposer(draft)
    got = regenerate(tiny_model, pair.document, pair.instruction, max_new_tokens=40, drafter=p)
    assert got.output_ids == ref.output_ids and got.text == ref.text
    if same:   # the target's own greedy tokens: every draft is accepted
        assert got.stats.draft_accepted == got.stats.draft_tokens > 0
        assert got.stats.forwards < ref.stats.forwards


def test_switchsd_drafts_with_the_draft_model_below_its_gate(tiny_model):
    pair = _pair()
    ref = regenerate(tiny_model, pair.document, pair.instruction, max_new_tokens=40)
    p = make_proposer("switchsd", document_ids=[], draft=tiny_model)
    assert isinstance(p, SwitchSDProposer) and isinstance(p.fallback, DraftModelProposer)
    got = regenerate(tiny_model, pair.document, pair.instruction, max_new_tokens=40, drafter=p)
    assert got.output_ids == ref.output_ids
    assert p.counts["neural"] > 0 and p.fallback.counts["accepted"] > 0


def test_edit_engine_drafts_with_the_backend_draft(tiny_model, other_tiny):
    loaded = dataclasses.replace(tiny_model, draft=other_tiny)
    pair = _pair()
    request = EditRequest(pair.document, pair.instruction, max_new_tokens=40)
    plain = EditEngine(loaded).edit(dataclasses.replace(request, gen_drafter="none"))
    drafted = EditEngine(loaded).edit(dataclasses.replace(request, gen_drafter="draft-model"))
    assert drafted.text == plain.text and drafted.program == plain.program
    with pytest.raises(InvalidRequestError, match="draft model"):
        EditEngine(tiny_model).edit(dataclasses.replace(request, gen_drafter="draft-model"))


def test_a_draft_model_request_without_one_is_refused_before_loading_the_model():
    # a model that cannot load: the refusal comes first, so it is the request's error, not a load error
    engine = EditEngine("/nonexistent/model")
    with pytest.raises(InvalidRequestError, match="needs a draft model"):
        engine.edit(EditRequest("x = 1\n", "Set x to 2.", gen_drafter="draft-model"))
    assert not engine.loaded


def test_a_draft_of_another_tokenizer_is_refused(tiny_model):
    tokenizer = type("Tok", (), {"__len__": lambda self: 10, "encode": lambda self, text: [1, 2]})()
    stranger = types.SimpleNamespace(spec="other", tokenizer=tokenizer)
    with pytest.raises(ValueError, match="does not share the tokenizer"):
        check_draft_compatible(tiny_model, stranger)


def test_a_draft_beside_a_served_model_is_refused():
    engine = EditEngine("http://127.0.0.1:9/v1", draft_model="default")
    with pytest.raises(ModelLoadError, match="draft model"):
        engine._load_draft(None, None)


@pytest.mark.real_model
def test_the_untrained_base_drafts_for_the_shipped_model():
    """EditEngine(draft_model=...) loads the draft beside the real default model (same tokenizer); the
    edit is the one decoded without a draft, and some of the draft's tokens are accepted."""
    pair = _pair()
    engine = EditEngine("default", "cpu", draft_model="default+none")
    request = EditRequest(pair.document, pair.instruction)
    plain = engine.edit(dataclasses.replace(request, gen_drafter="none"))
    drafted = engine.edit(dataclasses.replace(request, gen_drafter="draft-model"))
    assert engine.model.draft is not None and engine.model.draft.spec != engine.model.spec
    assert (drafted.text, drafted.program) == (plain.text, plain.program)
    assert drafted.stats.forwards < plain.stats.forwards      # 6 vs 11 target forwards when written
