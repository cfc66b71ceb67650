"""Full regeneration on a serving engine: ONE greedy request (``regen``; ``spec-edit`` is the same
request, sped up by the engine's own n-gram / prompt-lookup speculation when the server runs with it).

The prompt is ``engine.prompt.render_regen_prompt``'s ids; the request stops at the framing's end
marker (``REGEN_CLOSE``), EOS or the budget (then ``truncated``). The output text is the locally
decoded generated ids when the engine returns them (as the in-process path decodes its ids), else
the engine's text; the line program comes from ``engine.program.oracle.line_program``.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.errors import ContextOverflowError
from engine.program.oracle import line_program
from engine.prompt import REGEN_CLOSE, render_regen_prompt


@dataclass
class RemoteRegen:
    text: str
    program: tuple
    prompt_tokens: int
    decoded: int
    truncated: bool
    cached_tokens: int
    warnings: list


def regenerate_remote(server, tokenizer, document: str, instruction: str, *, strategy: str = "regen",
                      max_new_tokens: int = 512, cancel=None) -> RemoteRegen:
    rendered = render_regen_prompt(document, instruction, tokenizer)
    ids = list(rendered.ids)
    if len(ids) + max_new_tokens > int(server.context_length):
        raise ContextOverflowError(len(ids), int(server.context_length), max_new_tokens)
    from engine.guide.tokens import stop_ids

    stops = stop_ids(tokenizer)
    c = server.complete(ids, max_tokens=max_new_tokens, stop=[REGEN_CLOSE], stop_ids=stops, cancel=cancel)
    raw = c.text
    if c.token_ids is not None:
        kept = []
        for t in c.token_ids:
            if t in stops:
                break
            kept.append(t)
        decoded = tokenizer.decode(kept)
        if decoded.startswith(raw):   # the engine's text is cut at the stop string; ours is not yet
            raw = decoded
    cut = raw.find(REGEN_CLOSE)
    text = raw if cut < 0 else raw[:cut]
    truncated = c.finish == "length"
    warnings = []
    if truncated:
        warnings.append(f"{strategy}: output truncated at {max_new_tokens} tokens before the document ended; "
                        f"the rest of the document is missing from the result. Raise max_new_tokens or edit a "
                        f"smaller line range.")
    return RemoteRegen(text=text, program=tuple(line_program(document, text)), prompt_tokens=len(ids),
                       decoded=c.completion_tokens or len(c.token_ids or ()), truncated=truncated,
                       cached_tokens=int(c.cached_tokens or 0), warnings=warnings)
