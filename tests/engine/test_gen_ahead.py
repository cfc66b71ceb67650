"""A gen's first draft rides with the speculative forward that opens the gen (`drafts_ahead` drafters):
one forward less per gen, the same program, text and ids (engine.decode.program._speculate,
engine.decode.gen_body.GenBodies._ahead_round)."""
from __future__ import annotations

import pytest

from engine.decode.program import decode_program
from engine.drafters.base import drafts_ahead
from engine.drafters.pld import PromptLookupProposer
from engine.drafters.replaced import ReplacedLinesProposer
from engine.program.oracle import line_program
from engine.prompt import document_token_ids

DOC = "def f(x):\n    return x - 1\n\n\ndef g(y):\n    return y * 2\n\nprint(f(2), g(3))\n"


class _NotAhead(ReplacedLinesProposer):
    drafts_ahead = False


def _decode(model, document, drafter, **kw):
    return decode_program(model, document, "Fix f.", drafter=drafter, max_new_tokens=160, **kw)


def test_the_registry_drafters_that_draft_from_ids_draft_ahead():
    assert drafts_ahead(ReplacedLinesProposer([1, 2])) and drafts_ahead(PromptLookupProposer())
    assert not drafts_ahead(_NotAhead([1, 2])) and not drafts_ahead(object())


@pytest.mark.parametrize("gold", [
    DOC.replace("x - 1", "x + 1"),                                     # one changed line
    DOC.replace("x - 1", "x + 1").replace("y * 2", "y * 3"),           # two gens
    DOC.replace("    return y * 2\n", "    z = y\n    return z * 2\n"),  # a line becomes two
])
def test_forced_one_forward_less_per_gen_same_output(tiny_model, gold):
    ids = document_token_ids(tiny_model.tokenizer, DOC)
    program = line_program(DOC, gold)
    ahead = _decode(tiny_model, DOC, ReplacedLinesProposer(ids), forced=program)
    plain = _decode(tiny_model, DOC, _NotAhead(ids), forced=program)
    gens = sum(1 for op in program if type(op).__name__ == "Gen")
    assert ahead.text == plain.text == gold and ahead.output_ids == plain.output_ids
    assert ahead.stats.forwards == plain.stats.forwards - gens


@pytest.mark.parametrize("seed", range(6))
def test_free_runs_write_the_same_ids_with_and_without_drafting_ahead(make_tiny_model, real_tokenizer, seed):
    model = make_tiny_model(real_tokenizer, seed=seed)
    document = DOC.replace("2", str(seed))
    ids = document_token_ids(real_tokenizer, document)
    ahead = _decode(model, document, ReplacedLinesProposer(ids))
    plain = _decode(model, document, _NotAhead(ids))
    none = _decode(model, document, "none")
    assert ahead.output_ids == plain.output_ids == none.output_ids
    assert ahead.program == none.program and ahead.stats.truncated == none.stats.truncated
