"""Multi-candidate verification (KVRunner.feed_candidates + engine.decode.verify.verify_candidates).

On the tiny random model (fp32): each candidate's rows equal feeding that candidate alone; the cache
after verification is the greedy path's (ids, length, next logits); one candidate is verify_greedy;
decoding with several candidates per round (free text and gen bodies) equals plain greedy decoding.
"""
from __future__ import annotations

import random

import pytest
import torch

from engine.decode.generate import generate
from engine.decode.program import decode_program
from engine.decode.verify import verify_candidates, verify_greedy
from engine.drafters.base import propose_candidates
from engine.drafters.pld import PromptLookupProposer
from engine.program.oracle import line_program
from evaluation.corpus import load_pairs
from tests.engine.toy_lm import VOCAB, FakeRunner, NgramLM

ATOL = 1e-4


@pytest.fixture(scope="module")
def tiny(tiny_model):
    return tiny_model      # conftest: random Llama with a large init range (greedy depends on context)


def _ids(rng, n, vocab=2000):
    return [rng.randrange(vocab) for _ in range(n)]


@pytest.mark.parametrize("prefill", [0, 17])
@pytest.mark.parametrize("npend", [1, 3])
def test_each_candidate_sees_only_itself(tiny, prefill, npend):
    rng = random.Random(prefill * 10 + npend)
    prompt, pending = _ids(rng, prefill), _ids(rng, npend)
    cands = [_ids(rng, k) for k in (4, 1, 6)]
    for w, cand in enumerate(cands):
        alone = tiny.session()
        if prompt:
            alone.feed(prompt)
        ref = alone.feed(pending + cand, keep=len(cand) + 1)
        multi = tiny.session()
        if prompt:
            multi.feed(prompt)
        rows = multi.feed_candidates(pending, cands, lambda rows: (w, len(cand) - 1))
        assert [r.shape[0] for r in rows] == [len(c) + 1 for c in cands]
        assert torch.allclose(rows[w], ref, atol=ATOL), (w, (rows[w] - ref).abs().max())
        # the cache now holds prompt + pending + cand[:-1]: the same as the lone path cropped there
        alone.crop(prefill + npend + len(cand) - 1)
        assert multi.ids == alone.ids and multi.length == alone.length
        assert all(layer.keys.shape[-2] == multi.length for layer in multi.cache.layers)
        probe = _ids(rng, 2)
        assert torch.allclose(multi.feed(probe, keep=2), alone.feed(probe, keep=2), atol=ATOL)


def _greedy(loaded, prompt, n):
    s = loaded.session()
    out, pending = [], list(prompt)
    for _ in range(n):
        tok = int(s.feed(pending)[0].argmax())
        out.append(tok)
        pending = [tok]
    return out


def test_verify_candidates_keeps_the_longest_and_the_cache_is_greedys(tiny):
    rng = random.Random(5)
    prompt = _ids(rng, 12)
    gold = _greedy(tiny, prompt, 8)
    assert len(set(gold)) > 4
    wrong = [t + 1 for t in gold]
    cands = [gold[1:3] + wrong[3:6], wrong[1:5], gold[1:6] + wrong[6:7], gold[1:6] + [gold[6] + 2, 5]]
    s = tiny.session()
    s.feed(prompt[:-1])
    v = verify_candidates(s, [prompt[-1], gold[0]], cands)
    assert (v.index, v.accepted, v.bonus) == (2, gold[1:6], gold[6])   # ties go to the first
    assert v.drafted == sum(map(len, cands))
    ref = tiny.session()
    ref.feed(prompt + gold[:6])
    assert s.ids == ref.ids and s.length == ref.length
    assert torch.allclose(s.feed([gold[6]]), ref.feed([gold[6]]), atol=ATOL)


def test_one_candidate_is_verify_greedy(tiny):
    rng = random.Random(6)
    prompt = _ids(rng, 10)
    gold = _greedy(tiny, prompt, 5)
    for draft in (gold[:3] + [1], [gold[0] + 1], gold[:5]):
        a, b = tiny.session(), tiny.session()
        a.feed(prompt[:-1])
        b.feed(prompt[:-1])
        va = verify_candidates(a, [prompt[-1]], [draft, list(draft[:2])])   # a prefix adds nothing
        vb = verify_greedy(b, [prompt[-1]], draft)
        assert (va.accepted, va.bonus, va.index) == (vb.accepted, vb.bonus, 0)
        assert a.ids == b.ids and a.log.forwards == b.log.forwards


class ManyProposer:
    """Alternative drafts: junk, prompt lookup, and a shifted copy of the context (to be verified together)."""

    def __init__(self, seed: int, vocab: int = 2000):
        self.rng, self.vocab = random.Random(seed), vocab
        self.pld = PromptLookupProposer(window=6)
        self.rounds = 0

    def propose(self, context_ids, generated):
        return self.pld.propose(context_ids, generated)

    def propose_many(self, context_ids, generated, limit):
        self.rounds += 1
        tokens = list(context_ids) + list(generated)
        start = self.rng.randrange(max(1, len(tokens) - 4))
        return [_ids(self.rng, 3, self.vocab), self.propose(context_ids, generated), tokens[start:start + 5]][:limit]

    def update(self, accepted):
        return None


def test_generate_with_candidates_equals_greedy(tiny):
    rng = random.Random(7)
    for case in range(3):
        base = _ids(rng, 8)
        prompt = base * 3 + base[:3]                  # repetitive: prompt lookup finds something
        ref = generate(tiny.session(), prompt, max_new_tokens=30)
        proposer = ManyProposer(case)
        got = generate(tiny.session(), prompt, max_new_tokens=30, proposer=proposer)
        assert got.ids == ref.ids, case
        assert proposer.rounds > 0 and got.stats.forwards <= ref.stats.forwards
        # a session without feed_candidates verifies the first candidate only, still lossless
        small = _ids(rng, 30, VOCAB)
        lm = NgramLM(small, seed=case)
        plain = generate(FakeRunner(lm), small[:10], max_new_tokens=20)
        many = generate(FakeRunner(lm), small[:10], max_new_tokens=20, proposer=ManyProposer(case, VOCAB))
        assert many.ids == plain.ids


def test_propose_candidates_defaults_to_propose():
    assert propose_candidates(PromptLookupProposer(window=2), [1, 2, 3, 1], [2], 4) == [[3, 1]]
    assert propose_candidates(ManyProposer(0), [1, 2, 3, 4, 5, 6, 7], [], 1) == []  # limit 1: propose()


@pytest.mark.parametrize("forced", [False, True])
def test_gen_bodies_with_candidates_equal_greedy(tiny, forced):
    pairs = sorted(load_pairs("python"), key=lambda p: len(p.document))[:2]
    for pair in pairs:
        gold = line_program(pair.document, pair.gold) if forced else None
        ref = decode_program(tiny, pair.document, pair.instruction, max_new_tokens=48, forced=gold)
        proposer = ManyProposer(1)
        got = decode_program(tiny, pair.document, pair.instruction, max_new_tokens=48, forced=gold,
                             drafter=proposer)
        assert got.output_ids == ref.output_ids, pair.task_id
        assert (got.program, got.text, got.stats.truncated) == (ref.program, ref.text, ref.stats.truncated)
        assert got.stats.forwards <= ref.stats.forwards
        assert proposer.rounds > 0


def test_hidden_rows_follow_the_cache(tiny):
    """record_hidden keeps one layer's state per cached position, through crops and candidate verifies."""
    from engine.backends.hidden import capture

    rng = random.Random(8)
    prompt, cands = _ids(rng, 9), [_ids(rng, 3), _ids(rng, 4)]
    s = tiny.session()
    s.record_hidden(1, "mid")
    s.feed(prompt[:6])
    s.feed(prompt[6:], keep=1)
    s.crop(8)
    s.feed_candidates([prompt[8]], cands, lambda rows: (1, 2))
    with capture(tiny.model, [1], "mid") as got:
        tiny.model(input_ids=torch.tensor([s.ids]))
    full = got[1][0][0]
    assert s.hidden.length == s.length == full.shape[0]
    for pos in range(s.length):
        assert torch.allclose(s.hidden_row(pos), full[pos], atol=ATOL), pos
    assert s.hidden_row(s.length) is None
