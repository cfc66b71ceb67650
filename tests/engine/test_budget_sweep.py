"""Regression: any token budget ends a real-model decode cleanly (no crash, parseable program).

The budget used to cut the guessed op header after `</gen>` short while the verifier still walked
the whole guess (IndexError in `_verify_guess`).
"""
import pytest

from engine.decode.program import decode_program
from engine.program.grammar import parse, serialize

DOC = "def add(a, b):\n    return a - b\n"


@pytest.mark.real_model
@pytest.mark.parametrize("budget", range(16, 44, 4))
def test_every_budget_ends_cleanly(real_model, budget):
    result = decode_program(real_model, DOC, "Fix bugs in add.", max_new_tokens=budget)
    assert parse(serialize(result.program)) == result.program
    assert result.text is not None
    assert result.stats.decoded_tokens + result.stats.forced_tokens <= budget + 8
