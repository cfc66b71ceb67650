"""The free-text greedy loop with an optional draft proposer (plain, PLD or document-draft).

One round = one forward: `verify_greedy(runner, pending, draft)` over the ids committed last
round plus the proposer's draft. With `NoDraft` this is plain greedy decoding (one forward per
token). With a proposer the output is identical, only the forward count changes. A proposer that
offers several alternative drafts (``propose_many``) has them verified together in the same one
forward (`verify_candidates`, at most ``MAX_CANDIDATES``). A proposer with a
``screen_depth`` (CopyLoop) has its drafts screened at that depth first (`engine.decode.screened`).

FORCED MODE (`target=` token ids): the target tokens replace the argmax choices but the forward
schedule is the same (each round still costs its forward; acceptance = match with the target).
It measures what a given output costs under each strategy.

Stopping: a token in `stop_ids` (EOS), `stop_when(generated) -> int | None` (a framing end: the
number of generated tokens that belong to the output), or the token budget (truncated).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from engine.decode.screened import screen_depth, verify_screened
from engine.decode.types import DecodeStats
from engine.decode.verify import MAX_CANDIDATES, verify_candidates, verify_greedy
from engine.drafters.base import DraftProposer, NoDraft, attach_session, propose_candidates


@dataclass
class Generation:
    """Committed output ids (stop token / framing end excluded) and stats.

    In ``stats`` (``engine.decode.types.DecodeStats``) ``copied_tokens`` = ``draft_accepted`` = tokens
    accepted from drafts; ``decoded_tokens`` / ``forced_tokens`` = the model's (or the target's) own
    tokens; one forward per round."""

    ids: list[int]
    stats: DecodeStats
    stopped_by: str = ""          # "eos" | "end" | "budget" | "target"
    extra: dict = field(default_factory=dict)


def generate(
    runner,
    pending: list[int],
    *,
    max_new_tokens: int,
    stop_ids: frozenset[int] | set[int] = frozenset(),
    stop_when: Callable[[list[int]], int | None] | None = None,
    proposer: DraftProposer | None = None,
    context_ids: list[int] | None = None,
    target: list[int] | None = None,
    on_forward: Callable[[DecodeStats], None] | None = None,
) -> Generation:
    """Greedy (or forced) generation after `pending` (e.g. the whole prompt: the first forward is
    the prefill). Returns the output ids before the stop; the KV cache may hold a few extra."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    proposer = proposer or NoDraft()
    attach_session(proposer, runner)
    context = list(context_ids) if context_ids is not None else list(pending)
    stats = DecodeStats()
    generated: list[int] = []
    start = time.perf_counter()
    choose = None
    if target is not None:
        gold = list(target)

        def choose(i, row, prefix, _gen=generated, _gold=gold):  # noqa: ANN001
            pos = len(_gen) + i
            return _gold[pos] if pos < len(_gold) else -1

    stopped_by = "budget"
    while True:
        room = max_new_tokens - len(generated)
        drafts = [d[: max(0, room - 1)] for d in propose_candidates(proposer, context, generated, MAX_CANDIDATES)]
        drafts = [d for d in drafts if d]
        draft = drafts[0] if drafts else []
        depth = screen_depth(runner, proposer)  # > 0: the drafter asks for CopyLoop screening (engine.decode.screened)
        if len(drafts) > 1:
            v = verify_candidates(runner, pending, drafts, choose=choose)
        elif depth:
            v = verify_screened(runner, pending, draft, depth=depth, choose=choose)
        else:
            v = verify_greedy(runner, pending, draft, choose=choose)
        proposer.update(len(v.accepted))
        stats.forwards += 1
        stats.draft_tokens += sum(map(len, drafts))
        committed = v.committed
        if committed[-1] == -1:            # forced target exhausted
            committed = committed[:-1]
            stopped_by = "target"
        cut = next((k for k, t in enumerate(committed) if t in stop_ids), None)
        if cut is not None:
            committed = committed[:cut]
            stopped_by = "eos"
        n_acc = min(len(v.accepted), len(committed))
        stats.copied_tokens += n_acc
        stats.draft_accepted += n_acc
        if target is not None:
            stats.forced_tokens += len(committed) - n_acc
        else:
            stats.decoded_tokens += len(committed) - n_acc
        generated.extend(committed)
        if on_forward is not None:
            on_forward(stats)
        if stop_when is not None:
            keep = stop_when(generated)
            if keep is not None:
                drop = len(generated) - keep      # tail of this round's committed tokens
                own = min(drop, len(committed) - n_acc)
                if target is not None:
                    stats.forced_tokens -= own
                else:
                    stats.decoded_tokens -= own
                stats.copied_tokens -= drop - own
                stats.draft_accepted -= drop - own
                del generated[keep:]
                stopped_by = "end"
                break
        if stopped_by in ("eos", "target"):
            break
        if len(generated) >= max_new_tokens:
            del generated[max_new_tokens:]
            stats.truncated = True
            break
        pending = [committed[-1]]
    stats.wall_ms = (time.perf_counter() - start) * 1000.0
    return Generation(ids=generated, stats=stats, stopped_by=stopped_by)
