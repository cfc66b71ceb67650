"""Fixtures for decoder/FSM tests: tiny random models, a literal-splitting tokenizer, a scripted model.

* ``tiny_model``: random-init Llama (LlamaConfig, the real tokenizer's vocab), CPU fp32; large
  init range so greedy choices depend on the context.
* ``char_tokenizer`` / ``char_model``: a byte-level tokenizer whose vocabulary is single
  characters plus a few odd merges (``</``, ``ge``, ``12``, ``co``...), so every structural
  literal is split into several pieces and multi-digit tokens exist.
* ``scripted``: wraps a model so that its greedy choice follows a script ``f(prefix_ids) ->
  token id | None`` (used to force EOS, odd ``</gen>`` splits and overshooting tokens).
"""
from __future__ import annotations

import dataclasses

import pytest
import torch


def make_tiny(tokenizer, *, seed: int = 0, hidden: int = 64, layers: int = 2, init_range: float = 0.3,
              context_length: int = 4096):
    from transformers import LlamaConfig, LlamaForCausalLM

    from engine.backends.model import LoadedModel

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2,
        num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
        max_position_embeddings=context_length, initializer_range=init_range,
        tie_word_embeddings=True, attn_implementation="sdpa",
    )
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    return LoadedModel(model=model, tokenizer=tokenizer, device=torch.device("cpu"), dtype=torch.float32,
                       spec=f"tiny(seed={seed})", context_length=context_length)


@pytest.fixture(scope="session")
def tiny_model(real_tokenizer):
    return make_tiny(real_tokenizer)


@pytest.fixture(scope="session")
def make_tiny_model():
    return make_tiny


@pytest.fixture(scope="session")
def char_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {"<|endoftext|>": 0}
    for ch in alphabet:
        vocab[ch] = len(vocab)
    merges = [("<", "/"), ("g", "e"), ("1", "2"), ("12", "3"), ("c", "o"), ('"', "/"), ("Ġ", "l")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>")


@pytest.fixture(scope="session")
def char_model(char_tokenizer):
    return make_tiny(char_tokenizer, seed=1, hidden=32, layers=1)


class ScriptedModel(torch.nn.Module):
    """Adds a large bonus to the logit of ``script(prefix_ids)`` at every kept position."""

    def __init__(self, inner, script, bonus: float = 1e4):
        super().__init__()
        self.inner = inner
        self.script = script
        self.bonus = bonus
        self.seq: list[int] = []

    def forward(self, input_ids, past_key_values=None, logits_to_keep=1, **kw):
        past = 0 if past_key_values is None else past_key_values.get_seq_length()
        new = input_ids[0].tolist()
        self.seq = self.seq[:past] + new
        out = self.inner(input_ids=input_ids, past_key_values=past_key_values, logits_to_keep=logits_to_keep, **kw)
        keep = out.logits.shape[1]
        total = len(self.seq)
        for r in range(keep):
            prefix = self.seq[: total - keep + r + 1]
            tok = self.script(prefix)
            if tok is not None:
                out.logits[0, r, tok] += self.bonus
        return out


@pytest.fixture(scope="session")
def scripted():
    """scripted(loaded, script) -> a LoadedModel whose greedy choices follow the script where it speaks."""

    def wrap(loaded, script):
        return dataclasses.replace(loaded, model=ScriptedModel(loaded.model, script))

    return wrap
