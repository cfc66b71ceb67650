"""Speculative proposers and the greedy verifier are lossless: same tokens as plain greedy."""
from __future__ import annotations

import random

import pytest
import torch

from engine.decode.verify import verify_greedy
from engine.drafters import NoDraft, make_proposer
from engine.decode.generate import generate
from engine.drafters.pld import PromptLookupProposer, find_ngram
from engine.drafters.document import DocumentDraftProposer
from tests.engine.toy_lm import VOCAB, FakeRunner, NgramLM, edited


def test_verify_greedy_accepts_matching_prefix_and_crops():
    lm = NgramLM([1, 2, 3, 4, 5, 6, 7], seed=0)
    runner = FakeRunner(lm)
    v = verify_greedy(runner, [1, 2], [3, 4, 9, 9])
    assert v.accepted == [3, 4] and v.bonus == 5 and v.committed == [3, 4, 5]
    assert runner.ids == [1, 2, 3, 4]          # rejected tail cropped, bonus not fed
    v = verify_greedy(runner, [5], [6, 7])
    assert v.accepted == [6, 7] and runner.forwards == 2


def test_verify_greedy_mask_and_choose():
    runner = FakeRunner(NgramLM([1, 2, 3, 4], seed=0))
    # the mask forbids the greedy token 3: the best allowed id (all logits 0) is the first allowed
    v = verify_greedy(runner, [1, 2], [3], mask=lambda prefix: torch.tensor([7, 8]))
    assert v.accepted == [] and v.bonus == 7
    runner = FakeRunner(NgramLM([1, 2, 3, 4], seed=0))
    v = verify_greedy(runner, [1, 2], [3, 4, 5], choose=lambda i, row, prefix: [3, 4, 6][i])
    assert v.accepted == [3, 4] and v.bonus == 6


@pytest.mark.parametrize("window", [16, 32, 64])
def test_spec_edit_and_pld_lossless_on_many_random_docs(window):
    rng = random.Random(window)
    for case in range(60):
        doc = [rng.randrange(VOCAB) for _ in range(rng.randint(5, 120))]
        lm = NgramLM(edited(doc, rng), seed=case)
        prompt = [rng.randrange(VOCAB) for _ in range(5)] + doc
        budget = len(doc) + 10
        ref = generate(FakeRunner(lm), prompt, max_new_tokens=budget, stop_ids={0})
        for proposer in (DocumentDraftProposer(doc, window=window), PromptLookupProposer(window=window),
                         DocumentDraftProposer(doc, window=window, probe=4, min_ngram=1)):
            runner = FakeRunner(lm)
            got = generate(runner, prompt, max_new_tokens=budget, stop_ids={0}, proposer=proposer)
            assert got.ids == ref.ids, (case, type(proposer).__name__)
            assert got.stats.truncated == ref.stats.truncated
            assert got.stats.forwards <= ref.stats.forwards
            assert got.stats.copied_tokens + got.stats.decoded_tokens == len(got.ids)


def test_spec_edit_copies_most_of_a_lightly_edited_document():
    doc = list(range(1, 49))
    edited = doc[:30] + [49] + doc[31:40] + doc[41:]     # one substitution, one deletion
    lm = NgramLM(edited, seed=0)
    got = generate(FakeRunner(lm), edited[:2], max_new_tokens=len(edited) - 2,
                   proposer=DocumentDraftProposer(doc[2:], window=16))
    ref = generate(FakeRunner(lm), edited[:2], max_new_tokens=len(edited) - 2)
    assert ref.ids == edited[2:]
    assert got.ids == ref.ids
    assert got.stats.copied_tokens > 0.8 * len(got.ids)
    assert got.stats.forwards <= 8 < ref.stats.forwards


def test_document_proposer_reanchors_after_an_edit():
    doc = [10, 11, 12, 13, 14, 15, 16, 17]
    p = DocumentDraftProposer(doc, window=3)
    assert p.propose([], []) == [10, 11, 12]
    p.update(1)                                          # 10 accepted, model said 99 instead of 11
    assert p.propose([], [10, 99]) == [] or p.reanchors == 1
    p2 = DocumentDraftProposer(doc, window=3)
    p2.propose([], [])
    p2.update(3)
    assert p2.propose([], [10, 11, 12, 13]) == [14, 15, 16]     # bonus matched the doc: keep going
    p2.update(0)
    assert p2.propose([], [10, 11, 12, 13, 77, 15, 16]) == [17]  # substitution: re-anchor on 15 16
    assert p2.reanchors == 1


def test_pld_proposes_continuation_of_latest_ngram():
    p = PromptLookupProposer(window=3, max_ngram=2)
    assert p.propose([5, 6, 7, 8, 9], [6, 7]) == [8, 9, 6]
    assert p.propose([1, 2, 3], [4]) == []
    assert find_ngram([1, 2, 1, 2, 3], [1, 2], prefer=1) == 4


def test_registry():
    assert isinstance(make_proposer("none"), NoDraft)
    with pytest.raises(ValueError, match="document_ids"):
        make_proposer("spec-edit")
    with pytest.raises(ValueError, match="unknown drafter"):
        make_proposer("medusa")


@pytest.fixture(scope="module")
def tiny():
    from engine.backends.model import tiny_random_model

    return tiny_random_model(seed=3)


def test_lossless_with_real_kv_cache_on_tiny_model(tiny):
    """Cropping a real DynamicCache after rejections must not change greedy output."""
    from engine.backends.kv import KVRunner

    rng = random.Random(0)
    tok = tiny.tokenizer
    accepted = 0
    for case in range(4):
        words = [rng.choice(["x", "y", "=", "+", "1", "\n", "def", "f", "(", ")", ":"]) for _ in range(40)]
        doc_ids = tok.encode(" ".join(words), add_special_tokens=False)
        prompt = tok.encode("Rewrite:\n", add_special_tokens=False) + doc_ids
        ref = generate(KVRunner(tiny.model), prompt, max_new_tokens=40)
        for proposer in (DocumentDraftProposer(doc_ids, window=16), PromptLookupProposer(window=8)):
            got = generate(KVRunner(tiny.model), prompt, max_new_tokens=40, proposer=proposer)
            assert got.ids == ref.ids, case
            accepted += got.stats.copied_tokens
    assert accepted > 0          # some drafts were (partly) accepted, so crops after rejections ran


def test_pld_tolerates_context_that_already_ends_with_generated():
    p = PromptLookupProposer(window=2, max_ngram=2)
    assert p.propose([5, 6, 7, 8, 1, 6, 7], [6, 7]) == p.propose([5, 6, 7, 8, 1], [6, 7]) == [8, 1]
