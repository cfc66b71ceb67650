"""CopyLoop context-copy proposals (Du & Chung, "CopyLoop", arXiv:2610.38822, §2), on a standard decoder.

Each round the loop's block starts with a fresh model-predicted head (the last committed token, the
end of ``generated``) and the proposer appends up to ``tail`` (the paper's K) tokens copied from the
context: the generated tail's suffix of length 4, else 3, 2, 1 is looked up in prompt + output, and
the tokens that followed its MOST RECENT earlier occurrence are proposed; no match: no draft (a
single-token block). Generic: it knows nothing about documents (``document_ids`` is ignored).

``screen_depth`` (the paper's d_s) asks the decoding loops to screen each draft at that decoder depth
before the full-depth verify (``engine.decode.screened`` over ``engine.backends.shallow``): the
draft is cut at the first token the shallow readout disagrees with and only the survivors continue
at depth, reusing their shallow hidden states and KV. 0 = no screening (the proposals are verified
as any drafter's). Full-depth verification decides every kept token, so output == greedy.

Continuous scheduling (the paper's overlap of the next block's screening with the current block's
deep verification) is not applicable here: on a looped Transformer the positions of a block sit at
different recurrent depths and a new block can enter while older ones are still looping, but on a
single-sequence standard decoder the next block's proposal depends on the current block's verified
bonus token (the fresh head), which exists only after the deep layers finish, and a CPU forward is
not pipelined across layers. What carries over is state continuation: survivors advance from depth
d_s to full depth without recomputing the shallow layers.

Defaults (``DEFAULTS_FILE``) come from a calibration run (``training.copyloop_calibrate``)
of the default model on HumanEvalPack-Fix train pairs; without that file: K = 6, the paper's
deployment default for base models, and no screening.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

DEFAULTS_FILE = Path(__file__).resolve().parent.parent / "weights" / "copyloop" / "smollm2-135m-cad.json"
PAPER_TAIL = 6          # the paper's deployment K for base models (§3.3, B.4)
MAX_MATCH = 4           # suffix match lengths tried, longest first (§2)
MIN_MATCH = 1


@lru_cache(maxsize=1)
def calibrated_defaults() -> dict:
    """``{"tail": K, "screen_depth": d_s}`` from ``DEFAULTS_FILE`` (the calibration run), else the paper's."""
    try:
        data = json.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
        return {"tail": int(data["tail"]), "screen_depth": int(data["screen_depth"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {"tail": PAPER_TAIL, "screen_depth": 0}


def latest_match(tokens: list[int], needle: list[int], end: int) -> int:
    """Index just after the most recent occurrence of ``needle`` ending at or before ``end``, or -1."""
    n = len(needle)
    first = needle[0]
    for i in range(end - n, -1, -1):
        if tokens[i] == first and tokens[i:i + n] == needle:
            return i + n
    return -1


class CopyLoopProposer:
    """Proposes up to ``tail`` tokens following the latest earlier occurrence of the output's suffix."""

    def __init__(self, tail: int | None = None, screen_depth: int | None = None):
        defaults = calibrated_defaults()
        self.tail = defaults["tail"] if tail is None else int(tail)
        self.screen_depth = defaults["screen_depth"] if screen_depth is None else int(screen_depth)
        if self.tail < 1 or self.screen_depth < 0:
            raise ValueError(f"bad CopyLoop options tail={self.tail} screen_depth={self.screen_depth}")

    def propose(self, context_ids: list[int], generated: list[int]) -> list[int]:
        tokens = list(context_ids)
        # context_ids should exclude `generated`; gen bodies pass them already appended
        if not generated or tokens[-len(generated):] != list(generated):
            tokens += generated
        for n in range(min(MAX_MATCH, len(generated)), MIN_MATCH - 1, -1):
            stop = latest_match(tokens, tokens[-n:], len(tokens) - 1)  # an occurrence other than the suffix
            if stop >= 0:
                return tokens[stop:stop + self.tail]
        return []

    def update(self, accepted: int) -> None:
        return None
