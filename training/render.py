"""Training targets rendered by the decoder's own code, so training and decoding cannot drift.

``render_case(case, tokenizer, profile)`` returns the ids the decoder would hold in its KV cache
after decoding the case's oracle program, and which of them are in the loss:

* context: ``engine.prompt.render_prompt`` (the same profile the weights will be loaded with);
* target: ``engine.guide.tokens.op_token_parts`` of ``engine.program.oracle.line_program(document, gold)`` (or the
  token program for ``cad-tokens`` cases), then ``</program>`` and EOS;
* loss: copy headers, gen text, ``</gen>``, ``</program>`` and EOS; the spliced copy payloads are
  context only (the decoder splices them, the model never chooses them).

A forced decode of the same program (``engine.decode.program.decode_program(..., forced=program)``)
produces exactly ``ids[len(prompt):-1]`` (everything but EOS): a test checks it.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.guide.tokens import op_token_parts, token_table
from engine.decode.gen_end import decode
from engine.program.oracle import line_program, token_program
from engine.prompt import render_prompt


class UnrenderableCase(ValueError):
    """The case cannot be expressed as a program for this tokenizer (e.g. gold does not round-trip)."""


@dataclass
class RenderedCase:
    ids: list[int]
    loss_mask: list[bool]       # True where ids[i] is a trained target (predicted from ids[:i])
    prompt_len: int
    program: tuple

    @property
    def target_tokens(self) -> int:
        return sum(self.loss_mask)


def oracle_program(case, tokenizer, view, token_level: bool) -> tuple:
    if not token_level:
        return line_program(case.document, case.gold)
    gold_ids = list(tokenizer.encode(case.gold, add_special_tokens=False))
    if decode(tokenizer, gold_ids) != case.gold:
        raise UnrenderableCase("the gold text does not round-trip through the tokenizer")
    return token_program(view.token_ids, gold_ids, lambda ids: decode(tokenizer, ids), min_span=8)


def render_case(case, tokenizer, profile: str = "short") -> RenderedCase:
    """Context + target ids of one case and its loss mask (see module doc)."""
    token_level = getattr(case, "granularity", "lines") == "tokens"
    prompt = render_prompt(case.document, case.instruction, tokenizer, token_level=token_level, profile=profile)
    table = token_table(tokenizer)
    program = oracle_program(case, tokenizer, prompt.view, token_level)
    ids, mask = list(prompt.ids), [False] * len(prompt.ids)
    parts = [p for op in program for p in op_token_parts(table, prompt.view, op)]
    parts += op_token_parts(table, prompt.view, "close")
    if tokenizer.eos_token_id is not None:
        parts.append(("eos", [int(tokenizer.eos_token_id)]))
    for label, part in parts:
        ids.extend(part)
        mask.extend([label != "payload"] * len(part))
    return RenderedCase(ids=ids, loss_mask=mask, prompt_len=len(prompt.ids), program=tuple(program))
