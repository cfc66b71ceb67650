"""A document whose prefill alone keeps a real edit in flight for seconds on a CPU.

Cancellation and queueing tests need an edit that is still running when the cancel (or the second
request) arrives. What the model writes cannot guarantee that: the shipped weights end a short
document's regeneration after ~16 tokens (~1 s). The prompt's prefill can: ~3,500 tokens take seconds
on the 2-core machines the tests run on, whatever the model then writes. Each `tag` gives a different
first line, so the server's prefix KV cache never finds one test's document in another's."""
from __future__ import annotations


def long_document(tag: str, functions: int = 240) -> str:
    """~3,500 tokens of Python (about 15 tokens per function), distinct from the first line on."""
    body = "".join(f"def {tag}_{i}(x):\n    return x + {i}\n\n" for i in range(functions))
    return f"# {tag}: a long document\n\n{body}"
