"""The "replaced-lines" drafter (engine.drafters.replaced): anchoring, and lossless decoding.

Lossless = the same tokens as decoding without a draft: on a toy LM over many random documents,
and on the tiny random model through the program decoder, free and forced.
"""
from __future__ import annotations

import random

import pytest

from engine.decode.generate import generate
from engine.decode.program import decode_program
from engine.drafters import DRAFTERS, make_proposer
from engine.drafters.replaced import ReplacedLinesProposer
from engine.program.oracle import line_program
from evaluation.corpus import load_pairs
from tests.engine.toy_lm import VOCAB, FakeRunner, NgramLM, edited


def test_registered_and_built_with_the_document():
    assert "replaced-lines" in DRAFTERS
    p = make_proposer("replaced-lines", document_ids=[1, 2, 3], window=8)
    assert isinstance(p, ReplacedLinesProposer) and p.window == 8


def test_gen_start_anchors_after_the_copied_text_then_follows_and_reanchors():
    doc = list(range(10, 40))
    p = ReplacedLinesProposer(doc, window=4)
    # prompt, then a copy whose payload is doc[0:12], then two literal tokens (the gen opener)
    context = [1, 2, 3] + doc[:12] + [90, 91]
    assert p.propose(context, []) == doc[12:16]
    p.update(2)                                     # doc[12], doc[13] accepted; the bonus follows
    assert p.propose(context, doc[12:15]) == doc[15:19]
    p.update(0)
    # the model wrote 77 instead of doc[15], then doc[16], doc[17]: re-anchor on the last two tokens
    assert p.propose(context, doc[12:15] + [77, doc[16], doc[17]]) == doc[18:22]
    # nothing matches the document: prompt lookup over the context and the gen
    q = ReplacedLinesProposer([50, 51, 52], window=3)
    assert q.propose([7, 8, 9, 5, 6], [8]) == [9, 5, 6]
    assert ReplacedLinesProposer([], window=2).propose([1], []) == []


@pytest.mark.parametrize("window", [4, 16])
def test_lossless_on_many_random_documents(window):
    rng = random.Random(window)
    saved = 0
    for case in range(60):
        doc = [rng.randrange(1, VOCAB) for _ in range(rng.randint(5, 100))]
        cut = rng.randrange(len(doc))
        lm = NgramLM(doc[:cut] + edited(doc[cut:], rng), seed=case)   # the gen rewrites doc[cut:]
        prompt = [rng.randrange(1, VOCAB) for _ in range(4)] + doc[:cut]
        budget = len(doc) - cut + 8
        ref = generate(FakeRunner(lm), prompt, max_new_tokens=budget, stop_ids={0})
        got = generate(FakeRunner(lm), prompt, max_new_tokens=budget, stop_ids={0},
                       proposer=ReplacedLinesProposer(doc, window=window))
        assert got.ids == ref.ids, case
        assert got.stats.truncated == ref.stats.truncated
        assert got.stats.forwards <= ref.stats.forwards
        saved += ref.stats.forwards - got.stats.forwards
    assert saved > 0


def _pairs():
    pairs = load_pairs("python")
    return sorted(pairs, key=lambda p: len(p.document))[:3]


def test_program_decoder_lossless_on_tiny_model_free(tiny_model):
    for pair in _pairs():
        for budget in (24, 64):
            ref = decode_program(tiny_model, pair.document, pair.instruction, max_new_tokens=budget)
            got = decode_program(tiny_model, pair.document, pair.instruction, max_new_tokens=budget,
                                 drafter="replaced-lines")
            assert got.output_ids == ref.output_ids, (pair.task_id, budget)
            assert (got.program, got.text, got.stats.truncated) == (ref.program, ref.text, ref.stats.truncated)


def test_program_decoder_lossless_on_tiny_model_forced(tiny_model):
    """Forced to the gold program: the same tokens, and the replaced lines are accepted as drafts."""
    accepted, forwards, ref_forwards = 0, 0, 0
    for pair in _pairs():
        program = line_program(pair.document, pair.gold)
        ref = decode_program(tiny_model, pair.document, pair.instruction, forced=program)
        got = decode_program(tiny_model, pair.document, pair.instruction, forced=program, drafter="replaced-lines")
        assert got.output_ids == ref.output_ids and got.text == ref.text == pair.gold, pair.task_id
        accepted += got.stats.draft_accepted
        forwards, ref_forwards = forwards + got.stats.forwards, ref_forwards + ref.stats.forwards
    assert accepted > 0
    assert forwards < ref_forwards   # the replaced lines save forwards here


def test_begin_gen_drafts_the_replaced_ids_and_resyncs_after_a_substituted_or_deleted_token():
    doc, src, ctx = list(range(100, 140)), list(range(10, 30)), [1, 2, 3]
    p = ReplacedLinesProposer(doc, window=4)
    p.begin_gen(src)
    assert p.propose(ctx, []) == src[0:4]           # the gen starts where the replaced lines start
    p.update(2)                                     # src[2] rejected: the model wrote 77 instead
    assert p.propose(ctx, src[:2] + [77]) == src[3:7]   # substituted: the line goes on after it
    p.update(4)
    assert p.propose(ctx, src[:2] + [77] + src[3:8]) == src[8:12]
    p.begin_gen(src)                                # a new gen: the cursor is back at the start
    assert p.propose(ctx, []) == src[0:4]
    p.update(1)                                     # src[1] rejected, the model wrote src[2]: a deletion
    assert p.propose(ctx, [src[0], src[2]]) == src[3:7]


def test_begin_gen_assumes_a_substitution_once_not_for_new_text():
    src = list(range(10, 30))
    p = ReplacedLinesProposer(list(range(100, 140)), window=4)
    p.begin_gen(src)
    assert p.propose([1, 2, 3], []) == src[0:4]
    p.update(0)
    assert p.propose([1, 2, 3], [88]) == src[1:5]   # first difference: assumed substituted
    p.update(0)
    assert p.propose([1, 2, 3], [88, 99]) == []     # again: new text, nothing in the source or context


def test_begin_gen_without_replaced_ids_anchors_on_the_document():
    doc = list(range(10, 40))
    p = ReplacedLinesProposer(doc, window=4)
    p.begin_gen([])                                 # the last copy reached the end: nothing is replaced
    assert p.propose([1, 2, 3] + doc[:12] + [90, 91], []) == doc[12:16]
