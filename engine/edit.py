"""One edit, end to end: scope the document, dispatch the strategy, re-base, assemble the result.

Called by `engine.api.EditEngine.edit` after validation and loading (imports torch-using modules,
so engine.api imports this lazily). Dispatch:
  * "cad" / "cad-tokens" -> engine.decode.program.decode_program (Copy-as-Decode, line / token copies)
  * "regen" / "spec-edit" -> engine.decode.regen.regenerate (full regeneration; spec-edit drafts from
    the document), compiled to a line Program with engine.program.oracle.line_program.
Range-scoped requests edit the slice only and are re-based with engine.program.scope.
"""
from __future__ import annotations

from dataclasses import replace

from engine.program.eol import adapt_program, adapt_text, uses_crlf
from engine.errors import ContextOverflowError, EditCancelled, EngineError
from engine.program.grammar import CopyTokens
from engine.backends.kv import DecodeCancelled
from engine.program.oracle import line_program
from engine.program.resolver import resolve
from engine.program.scope import rebase_program, slice_lines, splice_text


class StrategyUnavailableError(EngineError):
    """The strategy's implementation module is missing from this installation."""


def _progress_adapter(progress, ops: int = 0):
    from engine.api import Progress

    if progress is None:
        return None

    def on_forward(stats) -> None:
        progress(Progress(decoded=stats.decoded, copied=stats.copied, forced=stats.forced,
                          forwards=stats.forwards, ops=ops))

    return on_forward


def _run_regen(loaded, document, request, *, cancel, progress, window, probe):
    from engine.decode.regen import regenerate

    r = regenerate(loaded, document, request.instruction, strategy=request.strategy, window=window, probe=probe,
                   max_new_tokens=request.max_new_tokens, cancel=cancel,
                   on_forward=_progress_adapter(progress))
    s = r.stats
    per_op = [{"kind": request.strategy, "tokens": len(r.output_ids), "forwards": s.forwards,
               "ms": s.wall_ms, "copied": s.copied, "drafted": s.drafted}]
    counts = dict(decoded=s.decoded, copied=s.copied, forced=s.forced, forwards=s.forwards,
                  prompt_tokens=r.prompt_tokens, truncated=s.truncated, per_op=per_op)
    program, text = tuple(r.program), r.text
    if uses_crlf(document):
        text = adapt_text(text, document)
        program = tuple(line_program(document, text))
    return program, text, counts, list(r.warnings)


def _resolve_decoded(loaded, program, document, mode, token_level):
    """Resolve a decoded program again (after line-ending adaptation) the way the decoder does."""
    from engine.decode.gen_end import decode
    from engine.prompt import document_token_ids

    if not token_level:
        return resolve(program, document, mode).text
    return resolve(program, document, mode, token_ids=document_token_ids(loaded.tokenizer, document),
                   decode_tokens=lambda ids: decode(loaded.tokenizer, ids), granularity="tokens").text


class ProgramResolveError(EngineError):
    """The decoded program does not resolve against the document (strict mode)."""


def _run_cad(loaded, document, request, *, cancel, progress, gen_proposer: str = "none"):
    try:
        from engine.decode.program import decode_program
    except ImportError as exc:
        raise StrategyUnavailableError(
            f"strategy {request.strategy!r} needs engine.decode.program, which failed to import ({exc}); "
            f"use strategy 'regen' or 'spec-edit' meanwhile"
        ) from exc
    from engine.api import Progress
    from engine.drafters import make_proposer

    def on_forward(p) -> None:
        progress(Progress(decoded=p.decoded, copied=p.copied, forced=p.forced, forwards=p.forwards, ops=p.ops))

    gen_strategy = None if gen_proposer == "none" else make_proposer(gen_proposer)
    d = decode_program(loaded, document, request.instruction,
                       token_level=request.strategy == "cad-tokens",
                       max_new_tokens=request.max_new_tokens, cancel=cancel,
                       progress=on_forward if progress is not None else None,
                       mode=request.mode, gen_strategy=gen_strategy)
    warnings = list(d.warnings)
    if d.stats.repeating:
        warnings.append(
            f"{request.strategy}: a gen kept repeating itself, so decoding stopped early; the result "
            f"is incomplete and is not applied. Rephrase the instruction or edit a smaller line range."
        )
    elif d.stats.truncated:
        warnings.append(
            f"{request.strategy}: the program hit max_new_tokens={request.max_new_tokens} and was closed "
            f"early; the result may be incomplete. Raise max_new_tokens or edit a smaller line range."
        )
    if d.text is None:
        raise ProgramResolveError(
            f"the decoded program does not resolve against the document in {request.mode!r} mode: "
            f"{d.resolve_error}. Retry with mode='clipped' or another strategy."
        )
    program, text = tuple(d.program), d.text
    if uses_crlf(document):
        token_level = request.strategy == "cad-tokens"
        program = adapt_program(program, document, token_level=token_level)
        text = _resolve_decoded(loaded, program, document, request.mode, token_level)
    s = d.stats
    counts = dict(decoded=s.decoded_tokens, copied=s.copied_tokens, forced=s.forced_tokens,
                  forwards=s.forwards, prompt_tokens=s.prompt_tokens, truncated=s.truncated,
                  per_op=list(s.per_op))
    return program, text, counts, warnings


AUTO_BUDGET_MARGIN = 256


def auto_budget(tokenizer, text: str) -> int:
    """The default decode budget: enough to regenerate ``text`` whole, plus a margin for the edit.

    A program that copies is far shorter than this; regeneration needs all of it. A program that
    reaches the budget is reported truncated and not applied, so the budget bounds the time a
    runaway decode can take without cutting off a reasonable edit of a long document.
    """
    return len(tokenizer.encode(text, add_special_tokens=False)) + AUTO_BUDGET_MARGIN


def run_edit(loaded, request, line_range, *, cancel=None, progress=None, window: int = 32,
             probe: int | None = None, gen_proposer: str = "none"):
    """Edit `request.document` (or lines `line_range` of it) and return an EditResult."""
    from engine.api import EditResult, EditStats

    document = request.document
    sub = document if line_range is None else slice_lines(document, *line_range)
    if request.max_new_tokens is None:
        request = replace(request, max_new_tokens=auto_budget(loaded.tokenizer, sub))
    try:
        if request.strategy in ("regen", "spec-edit"):
            program, sub_text, counts, warnings = _run_regen(loaded, sub, request, cancel=cancel,
                                                             progress=progress, window=window, probe=probe)
        else:
            program, sub_text, counts, warnings = _run_cad(loaded, sub, request, cancel=cancel,
                                                           progress=progress, gen_proposer=gen_proposer)
    except DecodeCancelled as exc:
        raise EditCancelled(f"{request.strategy} edit cancelled") from exc
    except ContextOverflowError as exc:
        if line_range is not None:
            a, b = line_range
            exc.args = (f"{exc.args[0]} (lines {a}-{b} were selected; select fewer)",)
        raise
    if line_range is not None:
        a, b = line_range
        text = splice_text(document, a, b, sub_text)
        if any(isinstance(op, CopyTokens) for op in program):
            program = tuple(line_program(document, text))
        else:
            program = rebase_program(program, a, b, len(document.split("\n")), len(sub.split("\n")))
            rebased = resolve(program, document, "strict").text
            if rebased != text:
                warnings.append("range re-base: program and text disagreed; text follows the program")
                text = rebased
    else:
        text = sub_text
    output_tokens = len(loaded.tokenizer.encode(sub_text, add_special_tokens=False)) + 1
    forwards = max(1, counts["forwards"])
    stats = EditStats(
        decoded_tokens=counts["decoded"], copied_tokens=counts["copied"],
        forced_tokens=counts["forced"], forwards=counts["forwards"], ops=len(program),
        prompt_tokens=counts["prompt_tokens"], wall_ms=0.0, per_op=counts["per_op"],
        truncated=bool(counts["truncated"]), speedup_estimate=output_tokens / forwards,
        budget=request.max_new_tokens,
    )
    return EditResult(program=tuple(program), text=text, stats=stats, warnings=warnings)
