"""The confidence of a decoded edit: the least probability the model gave a token it chose, under the
grammar's mask; speculation (guessed headers, drafts) does not change it; a low one flags a changed edit."""
from __future__ import annotations

import math

import pytest
import torch

from engine.decode.choosers import Chooser
from engine.decode.program import decode_program
from engine.edit import LOW_CONFIDENCE, low_confidence_warning

DOC = "".join(f"value_{i} = {i} * 2\n" for i in range(1, 13))


def test_a_choice_counts_with_its_probability_under_the_mask():
    chooser = Chooser(None)
    row = torch.tensor([0.0, 2.0, 1.0, 5.0])
    allowed = torch.tensor([0, 1, 2])                    # 3 is masked out: the choice is 1
    assert chooser.choose(row, allowed, 0) == 1
    assert chooser.choose(row, None, 1) == 3
    p_masked = math.exp(2.0) / (math.exp(0.0) + math.exp(2.0) + math.exp(1.0))
    p_free = math.exp(5.0) / sum(math.exp(x) for x in (0.0, 2.0, 1.0, 5.0))
    assert chooser.confidence([1, 3]) == pytest.approx(min(p_masked, p_free))
    assert chooser.confidence([1, 7]) == pytest.approx(p_masked)   # position 1 holds another token now
    assert chooser.confidence([]) is None
    forced = Chooser([2, 3])
    forced.choose(row, allowed, 0)
    assert forced.confidence([2]) is None                # forced mode: the model chose nothing


@pytest.mark.parametrize("drafter", ["replaced-lines", "pld"])
def test_speculation_changes_forwards_not_the_confidence(tiny_model, drafter):
    plain = decode_program(tiny_model, DOC, "Double every value.", max_new_tokens=48, drafter="none",
                           speculative_headers=False, ride_along=False)
    fast = decode_program(tiny_model, DOC, "Double every value.", max_new_tokens=48, drafter=drafter)
    assert fast.output_ids == plain.output_ids
    assert 0.0 < plain.stats.confidence <= 1.0
    assert fast.stats.confidence == pytest.approx(plain.stats.confidence, rel=1e-4)


def test_a_low_confidence_warns_and_a_high_one_does_not():
    assert low_confidence_warning(None) is None and low_confidence_warning(LOW_CONFIDENCE) is None
    warning = low_confidence_warning(0.31)
    assert warning.startswith("low confidence") and "0.31" in warning


def test_a_changed_edit_below_the_threshold_carries_the_warning():
    from engine.api import EditEngine, EditRequest
    from engine.backends.model import tiny_random_model

    result = EditEngine(tiny_random_model(seed=2)).edit(EditRequest(DOC, "Double every value.", max_new_tokens=24))
    assert result.text != DOC and result.stats.confidence < LOW_CONFIDENCE   # a random model: unsure, and changes it
    assert any(w.startswith("low confidence") for w in result.warnings)
