"""The "switchsd" drafter (engine.drafters.switchsd): candidates, gate, probe file, lossless decoding.

On the tiny random model the shipped probe does not match (another model): the gate is the kappa-gram
match alone. A probe built for the tiny model's own signature exercises the hidden-state gate.
"""
from __future__ import annotations

import random

import pytest
import torch

from engine.decode.generate import generate
from engine.decode.program import decode_program
from engine.decode.regen import regenerate
from engine.drafters import DRAFTERS, make_proposer
from engine.drafters.switchsd import PROBE_PATH, SwitchSDProposer, load_probe, model_matches
from engine.program.oracle import line_program
from evaluation.corpus import load_pairs


def test_registered():
    assert "switchsd" in DRAFTERS
    p = make_proposer("switchsd", document_ids=[1, 2], window=6)
    assert isinstance(p, SwitchSDProposer) and p.window == 6


def test_candidates_are_recent_distinct_kappa_gram_continuations():
    p = SwitchSDProposer(window=3, candidates=2, kappa=2, probe=None)
    context = [1, 2, 7, 8, 9, 1, 2, 5, 6, 0, 1, 2, 5, 6, 4]
    assert p.propose_many(context, [1, 2], 8) == [[5, 6, 4], [5, 6, 0]]    # most recent first
    p3 = SwitchSDProposer(window=3, candidates=3, kappa=2, probe=None)
    assert p3.propose_many(context, [1, 2], 8) == [[5, 6, 4], [5, 6, 0], [7, 8, 9]]
    assert p3.propose_many(context, [1, 2], 1) == [[5, 6, 4]]                # the loop's limit
    assert p3.propose(context, [3, 3]) == []                                # no kappa-gram match: no draft


def test_shipped_probe_loads_and_is_sane():
    probe = load_probe(PROBE_PATH)
    assert probe is not None, f"{PROBE_PATH} missing: run python -m training.probe"
    assert len(probe["weight"]) == probe["model"]["hidden_size"]
    assert 0 <= probe["layer"] < probe["model"]["num_hidden_layers"] and probe["site"] in ("mid", "out")
    assert 0.0 < probe["tau"] < 1.0
    v = probe["validation"]
    assert 0.0 < v["precision"] <= 1.0 and 0.0 < v["recall"] <= 1.0 and 0.0 < v["f1"] <= 1.0
    assert PROBE_PATH.stat().st_size < 1_000_000


def test_probe_does_not_attach_to_another_model(tiny_model):
    p = SwitchSDProposer()
    session = tiny_model.session()
    p.attach(session)
    assert not model_matches(p.probe, tiny_model.model)
    assert p._weight is None and session.hidden is None      # kappa-gram gate only, nothing recorded


def _tiny_probe(model, tau: float, seed: int = 0) -> dict:
    from training.probe import signature

    torch.manual_seed(seed)
    sig = signature(model, 1)
    return {"format": 1, "layer": 1, "site": "mid", "tau": tau,
            "weight": torch.randn(sig["hidden_size"]).tolist(), "model": sig | {"tolerance": 1e-6}}


def _pairs():
    return sorted(load_pairs("python"), key=lambda p: len(p.document))[:2]


@pytest.mark.parametrize("tau", [None, 0.5, 1.01])
def test_lossless_in_gen_bodies_and_regeneration(tiny_model, tau):
    """Free and forced, gen bodies and full regeneration: the tokens of decoding without a draft."""
    for pair in _pairs()[:1 if tau is not None else 2]:
        for forced in (None, line_program(pair.document, pair.gold)):
            ref = decode_program(tiny_model, pair.document, pair.instruction, max_new_tokens=40, forced=forced)
            p = SwitchSDProposer(probe=None if tau is None else _tiny_probe(tiny_model.model, tau))
            got = decode_program(tiny_model, pair.document, pair.instruction, max_new_tokens=40, forced=forced,
                                 drafter=p)
            assert got.output_ids == ref.output_ids, (pair.task_id, tau, forced is None)
            assert got.stats.forwards <= ref.stats.forwards
        ref = regenerate(tiny_model, pair.document, pair.instruction, max_new_tokens=40, forced=pair.gold)
        p = SwitchSDProposer(probe=None if tau is None else _tiny_probe(tiny_model.model, tau))
        got = regenerate(tiny_model, pair.document, pair.instruction, max_new_tokens=40, forced=pair.gold, drafter=p)
        assert got.output_ids == ref.output_ids and got.text == ref.text
        if tau is None:
            assert got.stats.draft_accepted > 0 and got.stats.forwards < ref.stats.forwards
        if tau == 1.01:                                   # the probe never agrees: never a draft
            assert p.counts["drafted"] == 0 and p.counts["gated_out"] > 0 and got.stats.draft_tokens == 0


def test_gate_reads_the_recorded_hidden_state(tiny_model):
    probe = _tiny_probe(tiny_model.model, 0.5, seed=1)
    p = SwitchSDProposer(probe=probe, kappa=2)
    session = tiny_model.session()
    p.attach(session)
    assert session.hidden is not None and session.hidden.layer == 1
    rng = random.Random(0)
    ids = [rng.randrange(2000) for _ in range(12)]
    session.feed(ids + ids[:2])
    h = session.hidden_row(-1)
    expect = torch.sigmoid(h @ torch.tensor(probe["weight"])) >= 0.5
    assert bool(p.propose_many(ids + ids[:2], [], 4)) == bool(expect)
    gen = generate(session, [ids[2]], max_new_tokens=5, proposer=p, context_ids=ids + ids[:2])
    assert len(gen.ids) == 5
