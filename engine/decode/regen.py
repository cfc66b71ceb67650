"""Full regeneration of the edited document, free or forced, with any registered drafter.

The model is asked (engine.prompt's regen framing) to write the whole edited document; we decode
greedily until EOS, the framing's end marker, or the token budget (then `truncated`). The output is
compiled afterwards into a line Program with `engine.program.oracle.line_program(document, output)`, so
every strategy hands back a Program.

`drafter` is a name from the drafter registry (`engine.drafters.DRAFTERS`) or a `DraftProposer`; the
strategy registry (`engine.strategies`) says which drafter each regeneration strategy uses ("regen":
"none", one forward per output token; "spec-edit": the document itself as the draft). The drafter is
built with the regen framing's expected answer (document + end marker) as its `document_ids`. Every
drafter produces the same output token for token; they differ in forwards.

FORCED MODE (`forced=gold_text`): the gold output's tokens replace the argmax choices with the same
forward schedule (no draft: one forward per token; a drafter: one verify forward per round,
acceptance = match with gold). It measures what producing the gold costs under each drafter. The
budget is raised to fit the gold, so a forced run is never truncated.

    regenerate(loaded, document, instruction, *, drafter="none", window=32, probe=None,
               max_new_tokens=512, forced=None, cancel=None, on_forward=None) -> RegenResult
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from engine.decode.generate import generate
from engine.decode.types import DecodeStats
from engine.drafters import DraftProposer, make_proposer
from engine.errors import ContextOverflowError
from engine.guide.tokens import stop_ids
from engine.program.oracle import line_program
from engine.prompt import REGEN_CLOSE, render_regen_prompt

@dataclass
class RegenFraming:
    """How the regen prompt frames the answer: prompt ids, answer prefix and end marker."""

    prompt_ids: list[int]
    end_marker: str               # the answer ends where this text first appears
    draft_text: str               # the expected answer if nothing changed (document + end marker)

    def extract(self, output: str) -> str:
        """The edited document inside the raw answer text."""
        cut = output.find(self.end_marker)
        return output if cut < 0 else output[:cut]


@dataclass
class RegenResult:
    """The edited document, its line program, and how it was produced."""

    text: str
    program: tuple
    output_ids: list[int]
    prompt_tokens: int
    stats: DecodeStats
    drafter: str                  # the registry name ("none": plain greedy regeneration)
    stopped_by: str
    warnings: list[str] = field(default_factory=list)


def regen_framing(tokenizer, document: str, instruction: str) -> RegenFraming:
    """Render the regen prompt (engine.prompt.render_regen_prompt) and describe its framing."""
    rendered = render_regen_prompt(document, instruction, tokenizer)
    return RegenFraming(prompt_ids=list(rendered.ids), end_marker=REGEN_CLOSE,
                        draft_text=document + REGEN_CLOSE)


def _end_detector(tokenizer, marker: str) -> Callable[[list[int]], int | None]:
    """stop_when(generated): once the decoded text contains `marker`, the shortest token prefix
    that contains it (tokens a speculative round committed past the marker are dropped, so every
    strategy returns the same ids); else None."""
    state = {"checked": 0}
    back = 8  # tokens re-decoded before the new ones so markers split across rounds are seen

    def stop_when(generated: list[int]) -> int | None:
        lo = max(0, state["checked"] - back)
        state["checked"] = len(generated)
        if marker not in tokenizer.decode(generated[lo:]):
            return None
        for keep in range(lo + 1, len(generated) + 1):
            if marker in tokenizer.decode(generated[lo:keep]):
                return keep
        return len(generated)

    return stop_when


def regenerate(
    loaded,
    document: str,
    instruction: str,
    *,
    drafter: str | DraftProposer = "none",
    window: int = 32,
    probe: int | None = None,
    max_new_tokens: int = 512,
    forced: str | None = None,
    cancel: threading.Event | None = None,
    on_forward: Callable[[DecodeStats], None] | None = None,
    framing: RegenFraming | None = None,
) -> RegenResult:
    """Regenerate the edited document, drafting with `drafter` (see module docstring).

    An unknown drafter name raises ValueError naming the registered ones (before any forward)."""
    tok = loaded.tokenizer
    framing = framing or regen_framing(tok, document, instruction)
    prompt_ids = framing.prompt_ids
    context_length = int(getattr(loaded, "context_length", 0) or 0)
    if context_length and len(prompt_ids) + max_new_tokens > context_length:
        raise ContextOverflowError(len(prompt_ids), context_length, max_new_tokens)

    draft_ids = tok.encode(framing.draft_text, add_special_tokens=False)
    proposer = make_proposer(drafter, document_ids=draft_ids, window=window, probe=probe,
                             draft=getattr(loaded, "draft", None))
    name = drafter if isinstance(drafter, str) else type(drafter).__name__
    target = None
    if forced is not None:
        target = tok.encode(forced + framing.end_marker, add_special_tokens=False)
        max_new_tokens = max(max_new_tokens, len(target) + 1)

    runner = loaded.session(cancel=cancel)  # raises EditCancelled before a forward once cancelled
    gen = generate(
        runner,
        list(prompt_ids),
        max_new_tokens=max_new_tokens,
        stop_ids=stop_ids(tok),
        stop_when=_end_detector(tok, framing.end_marker),
        proposer=proposer,
        context_ids=list(prompt_ids),
        target=target,
        on_forward=on_forward,
    )
    raw = tok.decode(gen.ids)
    text = framing.extract(raw)
    gen.stats.prompt_tokens = len(prompt_ids)
    gen.stats.prompt_reused = runner.reused
    warnings = []
    if gen.stats.truncated:
        warnings.append(
            f"{'regen' if name == 'none' else name}: output truncated at {max_new_tokens} tokens before the "
            f"document ended; the rest of the document is missing from the result. Raise max_new_tokens or edit a "
            f"smaller line range."
        )
    return RegenResult(
        text=text,
        program=tuple(line_program(document, text)),
        output_ids=gen.ids,
        prompt_tokens=len(prompt_ids),
        stats=gen.stats,
        drafter=name,
        stopped_by=gen.stopped_by,
        warnings=warnings,
    )
