"""The shipped weights: "default" is the base plus the committed adapter and its short prompt, and
it writes closed edit programs where the untrained base runs on to its budget."""
from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.real_model

DOC = (
    "def mean(values):\n"
    '    """Return the arithmetic mean of a non-empty list of numbers."""\n'
    "    total = 0\n"
    "    for v in values:\n"
    "        total += v\n"
    "    return total / len(values)\n"
    "\n"
    "\n"
    "def clamp(x, low, high):\n"
    "    return max(low, min(x, high))\n"
)


def test_default_is_the_base_with_the_shipped_adapter(real_model):
    from engine.backends.adapters import shipped_adapter
    from engine.backends.model import load_model

    assert shipped_adapter() is not None
    base = load_model("default+none", device="cpu")
    assert real_model.prompt_profile == "short" and base.prompt_profile == "teach"
    ids = torch.tensor([real_model.tokenizer.encode(DOC)])
    with torch.no_grad():
        assert not torch.equal(real_model.model(ids).logits, base.model(ids).logits)


@pytest.mark.parametrize("instruction", [
    "Leave the file as it is.",
    "Insert `# TODO: handle an empty list` after line 2.",
    "Delete line 10.",
])
def test_the_shipped_model_closes_its_programs(real_model, instruction):
    """Completion, not correctness: every program ends by itself, well inside the auto budget."""
    from engine.api import EditEngine, EditRequest

    result = EditEngine(real_model).edit(EditRequest(document=DOC, instruction=instruction))
    assert not result.stats.truncated, result.program
    assert result.stats.decoded_tokens < result.stats.budget / 2


def test_the_shipped_model_leaves_a_document_alone_when_asked(real_model):
    from engine.api import EditEngine, EditRequest

    result = EditEngine(real_model).edit(EditRequest(document=DOC, instruction="Check the code but don't change anything."))
    assert result.text == DOC
