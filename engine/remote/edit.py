"""One remote edit end to end: scope -> strategy on the server -> resolve -> EditResult.

The remote counterpart of ``engine.edit.run_edit`` with the same contract, so front ends see the same
statuses, texts and programs: the range scope and re-base (``engine.program.scope``), the auto
budget (the edited text's tokens + 256), CRLF adaptation (``engine.program.eol``), the final text
from the pure resolver (``engine.program.resolver``), the same truncation / repetition warnings
(a truncated program is reported with ``stats.truncated`` and never applied by the callers).
``EditStats.forwards`` counts completion requests here (one request = one chunked prefill + decode
on the server); ``per_op`` entries say how many requests and ms each op took. Strategy ``auto``
runs ``cad`` here (``engine.picker.candidates_for``: only in-process forwards are modelled).
"""
from __future__ import annotations

from engine.decode.types import DecodeStats
from engine.edit import incomplete_warning, run_scoped
from engine.errors import ProgramResolveError
from engine.program.eol import adapt_program, adapt_text, uses_crlf
from engine.program.oracle import line_program
from engine.program.resolver import resolve
from engine.strategies import get_strategy
from engine.types import EditResult, Progress


def _program(backend, sub, request, strategy, cancel, progress):
    from engine.remote.cad import decode_program_remote

    d = decode_program_remote(backend.server, backend.tokenizer, sub, request.instruction,
                              token_level=strategy.token_level, max_new_tokens=request.max_new_tokens,
                              profile=backend.prompt_profile, cancel=cancel, progress=progress)
    stats = DecodeStats(decoded_tokens=d.decoded, copied_tokens=d.copied, forced_tokens=d.forced,
                        forwards=d.requests, prompt_tokens=d.prompt_tokens, prompt_reused=d.prompt_cached,
                        truncated=bool(d.truncated), repeating=bool(d.repeating), per_op=list(d.per_op))
    incomplete = incomplete_warning(stats, request)
    warnings = [incomplete] if incomplete else []
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
    return program, text, stats, warnings


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
    stats = DecodeStats(decoded_tokens=r.decoded, forwards=1, prompt_tokens=r.prompt_tokens,
                        prompt_reused=min(r.prompt_tokens, r.cached_tokens), truncated=bool(r.truncated), per_op=per_op)
    return program, text, stats, list(r.warnings)


def run_remote_edit(backend, request, line_range, *, cancel=None, progress=None, window: int = 32,
                    **_ignored) -> EditResult:
    """Edit ``request.document`` (or lines ``line_range``) through ``backend`` (a RemoteBackend)."""

    def run(sub, scoped):  # scoped.strategy: the request's, or the one auto picked (always cad here)
        strategy = get_strategy(scoped.strategy)
        return (_regen if strategy.family == "regen" else _program)(backend, sub, scoped, strategy, cancel, progress)

    return run_scoped(backend, request, line_range, run, window=window)
