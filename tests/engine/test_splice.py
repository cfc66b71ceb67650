"""Copy splices: one parallel-prefill forward equals N single-token steps; the decoder uses one per span."""
from __future__ import annotations

import pytest
import torch

from evaluation.corpus import load_pairs
from engine.decode.program import decode_program
from engine.program.grammar import CopyLines
from engine.backends.kv import KVRunner
from engine.program.oracle import line_program
from engine.prompt import render_prompt


def _splice_vs_steps(loaded, prefix, span):
    one = KVRunner(loaded.model)
    one.feed(prefix)
    spliced = one.feed(span, keep=1)[0]
    steps = KVRunner(loaded.model)
    steps.feed(prefix)
    for t in span:
        stepped = steps.feed([t], keep=1)[0]
    assert one.length == steps.length == len(prefix) + len(span)
    assert one.cache.get_seq_length() == steps.cache.get_seq_length() == len(prefix) + len(span)
    assert steps.log.forwards == 1 + len(span) and one.log.forwards == 2
    # one more token after both caches: positions must agree too
    probe = int(torch.argmax(spliced))
    after_one = one.feed([probe])[0]
    after_steps = steps.feed([probe])[0]
    return spliced, stepped, after_one, after_steps


@pytest.mark.real_model
def test_splice_equals_autoregressive_real_model(real_model):
    pair = load_pairs("python")[3]
    prompt = render_prompt(pair.document, pair.instruction, real_model.tokenizer)
    prefix = prompt.ids[:160]  # a real-text prefix; positions 160.. are checked below
    for n in (8, 24):
        span = prompt.view.token_ids[:n]
        spliced, stepped, after_one, after_steps = _splice_vs_steps(real_model, prefix, span)
        torch.testing.assert_close(spliced, stepped, rtol=0, atol=2e-3)
        torch.testing.assert_close(after_one, after_steps, rtol=0, atol=2e-3)
        assert int(spliced.argmax()) == int(stepped.argmax())


def test_splice_equals_autoregressive_tiny(tiny_model):
    ids = tiny_model.tokenizer.encode("def f(x):\n    return x + 1\n" * 3, add_special_tokens=False)
    spliced, stepped, after_one, after_steps = _splice_vs_steps(tiny_model, ids[:20], ids[20:])
    torch.testing.assert_close(spliced, stepped, rtol=0, atol=1e-4)
    torch.testing.assert_close(after_one, after_steps, rtol=0, atol=1e-4)


class _Spy:
    """A forward observer (engine.backends.base): the ids of every forward the backend runs."""

    def __init__(self):
        self.feeds: list[list[int]] = []

    def __call__(self, ids, ms):
        self.feeds.append(list(ids))


@pytest.fixture
def spy(tiny_model):
    observer = _Spy()
    tiny_model.observers.append(observer)
    yield observer
    tiny_model.observers.remove(observer)


def _contains(seq, sub):
    return any(seq[i:i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


def test_each_copy_span_is_one_forward_and_literals_ride_along(tiny_model, spy):
    pair = load_pairs("python")[0]
    program = line_program(pair.document, pair.gold)
    res = decode_program(tiny_model, pair.document, pair.instruction, forced=program, speculative_headers=False)
    assert res.program == program and res.text == pair.gold
    view = render_prompt(pair.document, pair.instruction, tiny_model.tokenizer).view
    for op in program:
        if isinstance(op, CopyLines):
            payload = view.payload_ids(op.start, op.end)
            assert sum(_contains(f, payload) for f in spy.feeds) == 1  # spliced by exactly one forward
    assert len(spy.feeds) == res.stats.forwards
    # copy-only program: every forward produces a decision's logits; no literal is fed on its own
    spy.feeds.clear()
    copy_only = (CopyLines(1, 4), CopyLines(5, len(view.lines)))
    res = decode_program(tiny_model, pair.document, pair.instruction, forced=copy_only, speculative_headers=False)
    assert res.text == pair.document
    assert res.stats.forwards == res.stats.masked_steps == len(spy.feeds)
    assert res.stats.forced_tokens > 0 and res.stats.copied_tokens > 0


def test_without_ride_along_costs_more_forwards_same_program(tiny_model):
    pair = load_pairs("js")[2]
    program = line_program(pair.document, pair.gold)
    kw = dict(forced=program, speculative_headers=False)
    ride = decode_program(tiny_model, pair.document, pair.instruction, **kw)
    seed = decode_program(tiny_model, pair.document, pair.instruction, ride_along=False, **kw)
    assert ride.program == seed.program == program and ride.text == seed.text == pair.gold
    assert ride.output_ids == seed.output_ids
    assert ride.stats.forwards < seed.stats.forwards
