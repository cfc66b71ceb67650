"""One remote edit end to end: scope -> strategy on the server -> resolve -> EditResult.

The remote counterpart of ``engine.edit.run_edit`` with the same contract, so front ends see the same
statuses, texts and programs: the range scope and re-base (``engine.program.scope``), the auto
budget (the edited text's tokens + 256), CRLF adaptation (``engine.program.eol``), the final text
from the pure resolver (``engine.program.resolver``), the same truncation / repetition warnings
(a truncated program is reported with ``stats.truncated`` and never applied by the callers).
``EditStats.forwards`` counts completion requests here (one request = one chunked prefill + decode
on the server); ``per_op`` entries say how many requests and ms each op took.
"""
from __future__ import annotations

from dataclasses import replace

from engine.errors import ContextOverflowError, ProgramResolveError
from engine.program.eol import adapt_program, adapt_text, uses_crlf
from engine.program.grammar import CopyTokens
from engine.program.oracle import line_program
from engine.program.resolver import resolve
from engine.program.scope import rebase_program, slice_lines, splice_text
from engine.strategies import get_strategy
from engine.types import EditResult, EditStats, Progress

AUTO_BUDGET_MARGIN = 256   # engine.edit.AUTO_BUDGET_MARGIN


def _program(backend, sub, request, strategy, cancel, progress):
    from engine.remote.cad import decode_program_remote

    d = decode_program_remote(backend.server, backend.tokenizer, sub, request.instruction,
                              token_level=strategy.token_level, max_new_tokens=request.max_new_tokens,
                              profile=backend.prompt_profile, cancel=cancel, progress=progress)
    warnings = []
    if d.repeating:
        warnings.append(f"{request.strategy}: a gen kept repeating itself, so decoding stopped early; the result "
                        f"is incomplete and is not applied. Rephrase the instruction or edit a smaller line range.")
    elif d.truncated:
        warnings.append(f"{request.strategy}: the program hit max_new_tokens={request.max_new_tokens} and was "
                        f"closed early; the result may be incomplete. Raise max_new_tokens or edit a smaller line range.")
    tokens = None
    if strategy.token_level:
        from engine.prompt import document_token_ids

        tokens = dict(token_ids=document_token_ids(backend.tokenizer, sub), granularity="tokens",
                      decode_tokens=lambda ids: backend.tokenizer.decode(list(ids), clean_up_tokenization_spaces=False))
    program = d.program
    try:
        res = resolve(program, sub, request.mode, **(tokens or {}))
    except ValueError as exc:
        raise ProgramResolveError(f"the decoded program does not resolve against the document in {request.mode!r} "
                                  f"mode: {exc}. Retry with mode='clipped' or another strategy.") from exc
    text = res.text
    warnings = list(res.warnings) + warnings
    if uses_crlf(sub):
        program = adapt_program(program, sub, token_level=strategy.token_level)
        text = resolve(program, sub, request.mode, **(tokens or {})).text
    counts = dict(decoded=d.decoded, copied=d.copied, forced=d.forced, forwards=d.requests,
                  prompt_tokens=d.prompt_tokens, truncated=d.truncated, per_op=list(d.per_op))
    return program, text, counts, warnings


def _regen(backend, sub, request, strategy, cancel, progress):
    from engine.remote.regen import regenerate_remote

    r = regenerate_remote(backend.server, backend.tokenizer, sub, request.instruction, strategy=strategy.name,
                          max_new_tokens=request.max_new_tokens, cancel=cancel)
    if progress is not None:
        progress(Progress(r.decoded, 0, 0, 1, 1))
    program, text = r.program, r.text
    if uses_crlf(sub):
        text = adapt_text(text, sub)
        program = tuple(line_program(sub, text))
    per_op = [{"kind": request.strategy, "tokens": r.decoded, "requests": 1}]
    counts = dict(decoded=r.decoded, copied=0, forced=0, forwards=1, prompt_tokens=r.prompt_tokens,
                  truncated=r.truncated, per_op=per_op)
    return program, text, counts, list(r.warnings)


def run_remote_edit(backend, request, line_range, *, cancel=None, progress=None, **_ignored) -> EditResult:
    """Edit ``request.document`` (or lines ``line_range``) through ``backend`` (a RemoteBackend)."""
    strategy = get_strategy(request.strategy)
    document = request.document
    sub = document if line_range is None else slice_lines(document, *line_range)
    if request.max_new_tokens is None:
        budget = len(backend.tokenizer.encode(sub, add_special_tokens=False)) + AUTO_BUDGET_MARGIN
        request = replace(request, max_new_tokens=budget)
    run = _regen if strategy.family == "regen" else _program
    try:
        program, sub_text, counts, warnings = run(backend, sub, request, strategy, cancel, progress)
    except ContextOverflowError as exc:
        if line_range is not None:
            exc.args = (f"{exc.args[0]} (lines {line_range[0]}-{line_range[1]} were selected; select fewer)",)
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
    output_tokens = len(backend.tokenizer.encode(sub_text, add_special_tokens=False)) + 1
    stats = EditStats(
        decoded_tokens=counts["decoded"], copied_tokens=counts["copied"], forced_tokens=counts["forced"],
        forwards=counts["forwards"], ops=len(program), prompt_tokens=counts["prompt_tokens"], wall_ms=0.0,
        per_op=counts["per_op"], truncated=bool(counts["truncated"]),
        speedup_estimate=output_tokens / max(1, counts["forwards"]), budget=request.max_new_tokens,
    )
    return EditResult(program=tuple(program), text=text, stats=stats, warnings=warnings)
