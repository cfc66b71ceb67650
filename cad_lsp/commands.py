"""The ``cad.applyEdit``, ``cad.previewEdit`` and ``cad.cancelAll`` commands.

Owns one edit's life cycle on the server, in order:

1. parse the argument object (:mod:`cad_lsp.arguments`); refuse ``cad.applyEdit`` when the
   instruction is missing (LSP has no text input: the editor must prompt for it) or when the
   client lacks ``workspace.applyEdit``;
2. snapshot the document (text + version) and build the :class:`engine.api.EditRequest`
   (settings + per-command ``strategy``/``maxNewTokens``; a ``range`` becomes ``line_range``);
3. start work-done progress, queue the job on the engine worker, await it off the event
   loop; ``$/cancelRequest`` and progress cancel both set the job's cancel event;
4. map the program to minimal TextEdits (:mod:`cad_lsp.textedits`), consuming an
   instruction comment if the action named one;
5. preview: return ``{diff, stats, program}``; apply: versioned ``workspace/applyEdit``,
   discarded (with a message) if the document changed while decoding.

Result of ``cad.applyEdit``: ``{applied, message, stats, program, edits, discarded}`` (plus
``truncated: true`` when a program cut off by the token budget was refused, see
:mod:`cad_lsp.settings` ``applyTruncated``; ``lowConfidence: true`` with ``diff``, ``previewId`` and
``newText`` when a changed edit less sure than ``minConfidence`` is held for review);
``stats`` are the engine's :class:`EditStats` plus ``server_ms``, ``engine_ms``, ``queue_ms``.
Engine errors are shown with ``window/showMessage`` and returned as the command's error
carrying the engine's message.
"""
from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from engine.api import (MODEL, UNCHANGED_HINT, EditCancelled, EditRequest, EngineError, ModelLoadError,
                        get_strategy, planner_note)
from engine.program.grammar import serialize
from engine.program.breakage import breakage_message, find_breakage
from engine.program.placeholders import find_lazy_placeholders, refusal_message

from .arguments import EditArgs, check_unicode, parse_edit_args
from .diffs import unified_diff
from .errors import CommandArgumentError, CommandRefusedError, EngineCommandError
from .instruction_comments import drop_line_from_program, locate_comment
from . import preview_cache
from .positions import range_to_line_range
from .progress import EditProgress
from .protocol import COMMAND_PARAMS
from .textedits import program_to_edits
from .documents import DocumentUnavailableError, take_snapshot
from .versioned_apply import apply_versioned, client_can_apply_edits
from .worker import CancelSignal, EditJob

_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")


def _end_note(stats: dict) -> str:
    """What ends an edit's message: who planned it when not the model, or what ``auto`` ran."""
    note = planner_note(stats.get("planner", ""))
    if note:
        return f" ({note})"
    return f" (auto ran {stats['picked']})" if stats.get("picked") else ""


# Engine errors whose message tells the user what to do.
_USER_FACING = (EngineError, ModelLoadError)

__all__ = ["APPLY_EDIT", "PREVIEW_EDIT", "CANCEL_ALL", "apply_edit", "preview_edit", "cancel_all"]

APPLY_EDIT = "cad.applyEdit"
PREVIEW_EDIT = "cad.previewEdit"
CANCEL_ALL = "cad.cancelAll"


async def apply_edit(ls: Any, *arguments: Any) -> dict:
    return await _run(ls, APPLY_EDIT, arguments, apply=True)


async def preview_edit(ls: Any, *arguments: Any) -> dict:
    return await _run(ls, PREVIEW_EDIT, arguments, apply=False)


def cancel_all(ls: Any, *arguments: Any) -> dict:
    count = ls.worker.cancel_all()
    ls.log(f"cancelAll: cancelled {count} edit(s)")
    return {"cancelled": count}


def _check_preconditions(ls: Any, command: str, args: EditArgs, apply: bool) -> None:
    if not (args.instruction or "").strip():
        raise CommandArgumentError(
            f"{command} needs an instruction: pass [{{uri, instruction, range?}}]. The code action "
            "'Apply edit instruction…' leaves it out on purpose because LSP has no text input: the "
            "VS Code and Neovim plugins prompt for it. In any other editor, write the instruction as a "
            "comment line (e.g. '# cad: handle an empty list' or '// cad: add a docstring') and pick the "
            "code action 'Apply: <instruction>' (the edit removes the comment).")
    if apply and not client_can_apply_edits(ls):
        message = (f"{command} is refused: this client does not support workspace/applyEdit "
                   "(capabilities.workspace.applyEdit), so the server cannot change the document. "
                   f"Use {PREVIEW_EDIT} to get a diff instead.")
        ls.show(message, types.MessageType.Error)
        raise CommandRefusedError(message)


def _build_request(ls: Any, args: EditArgs, text: str) -> EditRequest:
    settings = ls.settings
    line_range = None
    if args.range is not None:
        line_range = range_to_line_range(text, args.range, ls.position_encoding)
    strategy = args.strategy or settings.strategy
    try:  # a bad "strategy" argument is invalid params, whichever engine runs (found by the protocol fuzz)
        get_strategy(strategy)
    except EngineError as exc:
        raise CommandArgumentError(f"strategy: {exc}") from None
    # Leading blank lines and trailing blanks go; the first line keeps its indentation (a pasted
    # snippet without a fence anchors by whole lines, indentation included).
    instruction = _LEADING_BLANK_LINES.sub("", args.instruction.rstrip())
    return EditRequest(document=text, instruction=instruction,
                       strategy=strategy, line_range=line_range,
                       max_new_tokens=args.max_new_tokens or settings.max_new_tokens,
                       mode=settings.resolver_mode, gen_drafter=settings.gen_drafter,
                       snippet_merge=settings.snippet_merge)


def _retrieve(task: asyncio.Task) -> None:
    """Mark the task's exception as seen: after a ``$/cancelRequest`` pygls has already answered
    and never reads it, and asyncio would log "Task exception was never retrieved"."""
    if not task.cancelled():
        task.exception()


async def _run(ls: Any, command: str, arguments: tuple, *, apply: bool) -> dict:
    t0 = time.perf_counter()
    task = asyncio.current_task()
    if task is not None:
        task.add_done_callback(_retrieve)
    args = parse_edit_args(command, arguments)
    _check_preconditions(ls, command, args, apply)
    check_unicode(args.instruction, "the instruction", "Retype the instruction.")
    try:
        snap = await take_snapshot(ls, args.uri)
    except DocumentUnavailableError as exc:
        raise CommandArgumentError(str(exc)) from None
    check_unicode(snap.text, f"the document {args.uri}",
                  "Fix that character (or the file's encoding) and run the command again.")
    request = _build_request(ls, args, snap.text)
    cancel = CancelSignal()
    request_id = ls.protocol.msg_id
    ls.register_cancel(request_id, cancel)
    params = COMMAND_PARAMS.get()
    client_token = params.work_done_token if params is not None else None
    progress = await EditProgress.start(ls, client_token, cancel, "Copy-as-Decode", "queued",
                                        create_timeout=min(5.0, ls.settings.apply_edit_timeout))
    try:
        job = _submit(ls, request, cancel, progress)
        try:
            result = await _outcome(job, cancel)
        except asyncio.CancelledError:
            cancel.set()
            progress.end("cancelled")
            raise
        except EditCancelled as exc:
            progress.end("cancelled")
            ls.log(f"{command} {args.uri}: cancelled ({exc})")
            raise JsonRpcRequestCancelled(message=f"{command} was cancelled: {exc}") from None
        except _USER_FACING as exc:
            progress.end(f"failed: {exc}")
            ls.show(f"Copy-as-Decode: {exc}", types.MessageType.Error)
            raise EngineCommandError(str(exc), type(exc).__name__) from None
        except Exception as exc:  # an engine bug: tell the user; the traceback stays in the server log
            progress.end(f"failed: {type(exc).__name__}: {exc}")
            ls.show(f"Copy-as-Decode internal error: {type(exc).__name__}: {exc}", types.MessageType.Error)
            raise
        program = result.program
        expected: str | None = result.text
        if args.comment_text is not None:
            line = locate_comment(snap.text, args.comment_line, args.comment_text)
            if line is not None:
                dropped = drop_line_from_program(program, line + 1)
                if dropped != tuple(program):
                    program, expected = dropped, None
        plan = program_to_edits(program, snap.text, encoding=ls.position_encoding, mode=request.mode,
                                expected=expected,
                                granularity="tokens" if get_strategy(request.strategy).token_level else None)
        stats = _stats(result.stats, job, t0)
        reply = {"stats": stats, "program": serialize(program), "edits": len(plan.edits),
                 "warnings": list(result.warnings), "method": plan.method}
        lazy = find_lazy_placeholders(snap.text, plan.new_text)  # "... existing code ..." deleting code
        refusal = refusal_message(lazy) if lazy else None
        if lazy:
            reply["placeholders"] = [dict(line=p.line, text=p.text, deleted=p.deleted) for p in lazy]
            reply["warnings"].append(refusal)
        broken = find_breakage(snap.text, plan.new_text)   # advice: the edit is applied, the user told
        if broken is not None:
            reply["syntax"] = dict(check=broken.check, line=broken.line, detail=broken.detail)
            reply["warnings"].append(breakage_message(broken))
        if not apply:
            reply["diff"] = unified_diff(snap.text, plan.new_text, args.uri)
            reply.update(preview_cache.remember(ls, snap, plan, result, request, refusal=refusal,
                                                warnings=reply["warnings"]))
            progress.end("preview ready")
            _log_stats(ls, command, args.uri, stats, "previewed")
            return reply
        if result.stats.truncated and not ls.settings.apply_truncated:
            message = (f"not applied: the model hit the token budget (maxNewTokens={result.stats.budget}) "
                       "before finishing its edit program, so the rest of the document would be lost. "
                       "Raise cad.maxNewTokens, select a smaller range, or set cad.applyTruncated=true; "
                       f"{PREVIEW_EDIT} shows the partial result.")
            ls.show(f"Copy-as-Decode: {message}", types.MessageType.Warning)
            _log_stats(ls, command, args.uri, stats, "refused (truncated)")
            progress.end("not applied: truncated")
            reply.update(applied=False, message=message, discarded=False, truncated=True)
            return reply
        if refusal is not None:
            ls.show(f"Copy-as-Decode: {refusal}", types.MessageType.Warning)
            _log_stats(ls, command, args.uri, stats, "refused (lazy placeholder)")
            progress.end("not applied: placeholder would delete code")
            reply.update(applied=False, message=refusal, discarded=False)
            return reply
        unsure = _below_min_confidence(ls.settings.min_confidence, result.stats, plan.edits)
        if unsure is not None:   # held for review: the diff and a previewId that cad.applyPreview applies
            reply["diff"] = unified_diff(snap.text, plan.new_text, args.uri)
            reply.update(preview_cache.remember(ls, snap, plan, result, request, warnings=reply["warnings"]))
            ls.show(f"Copy-as-Decode: {unsure}", types.MessageType.Warning)
            _log_stats(ls, command, args.uri, stats, "held for review (low confidence)")
            progress.end("not applied: low confidence, review it")
            reply.update(applied=False, message=unsure, discarded=False, lowConfidence=True)
            return reply
        if cancel.is_set():  # cancelled after the decode finished: nothing has been sent yet
            progress.end("cancelled")
            raise JsonRpcRequestCancelled(message=f"{command} was cancelled before its edit was sent")
        outcome = await apply_versioned(ls, snap, plan.edits, f"cad: {request.instruction}",
                                        timeout=ls.settings.apply_edit_timeout, request_id=request_id)
        if outcome.applied and not plan.edits and result.stats.planner == MODEL:
            outcome = dataclasses.replace(outcome, message=f"no change: the model's edit reproduces the document; "
                                                           f"{UNCHANGED_HINT} (setting model)")
        if reply["warnings"] and outcome.applied:
            ls.show("Copy-as-Decode: " + "; ".join(reply["warnings"]), types.MessageType.Warning)
        if outcome.discarded or outcome.unconfirmed:
            ls.show(f"Copy-as-Decode: {outcome.message}", types.MessageType.Warning)
        stats["server_ms"] = (time.perf_counter() - t0) * 1000.0
        _log_stats(ls, command, args.uri, stats, outcome.message)
        note = _end_note(stats)
        progress.end(outcome.message + note)
        reply.update(applied=outcome.applied, message=outcome.message + note, discarded=outcome.discarded)
        if outcome.unconfirmed:
            reply["unconfirmed"] = True
        return reply
    finally:
        progress.end("done")
        ls.unregister_cancel(request_id)


def _below_min_confidence(minimum: float, stats: Any, edits) -> str | None:
    """Why a changed edit is held for review (``minConfidence``), or None to apply it."""
    confidence = getattr(stats, "confidence", None)
    if not edits or not minimum or confidence is None or confidence >= minimum:
        return None
    return (f"not applied: the model was unsure of this edit (its least sure choice had probability "
            f"{confidence:.2f}, below cad.minConfidence {minimum:g}); review the diff and apply it with "
            f"{preview_cache.APPLY_PREVIEW} (previewId in the reply), or lower cad.minConfidence")


async def _outcome(job: EditJob, cancel: CancelSignal):
    """The job's result, or ``EditCancelled`` as soon as ``cancel`` is set (queued or running):
    the engine stops at its next forward on its own; the client need not wait for that."""
    result = asyncio.wrap_future(job.future)
    cancelled = cancel.wait_async()
    try:
        await asyncio.wait({result, cancelled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancelled.cancel()
    if result.done() and not cancel.is_set():
        return result.result()
    result.add_done_callback(lambda f: f.cancelled() or f.exception())  # consumed, never "unretrieved"
    if job.started_at is None:
        raise EditCancelled("the edit was cancelled while it was queued")
    raise EditCancelled("the edit was cancelled while decoding")


def _submit(ls: Any, request: EditRequest, cancel: CancelSignal, progress: EditProgress) -> EditJob:
    settings = ls.settings

    def on_position(position: int) -> None:
        progress.report_threadsafe("running" if position <= 1 else f"queued (position {position})", force=True)

    def on_progress(p) -> None:
        progress.report_threadsafe(f"decoding: {p.decoded} generated, {p.copied} copied, {p.ops} ops", ops=p.ops)

    def on_status(message: str) -> None:
        progress.report_threadsafe(message, force=True)
        ls.log_threadsafe(message)

    job = EditJob(request, model=settings.model, device=settings.device, draft_model=settings.draft_model, cancel=cancel,
                  on_progress=on_progress, on_position=on_position, on_status=on_status)
    ls.worker.submit(job)
    return job


def _stats(stats: Any, job: EditJob, t0: float) -> dict:
    out = dataclasses.asdict(stats) if dataclasses.is_dataclass(stats) else dict(vars(stats))
    out["engine_ms"] = job.engine_ms
    out["queue_ms"] = ((job.started_at or t0) - job.queued_at) * 1000.0
    out["server_ms"] = (time.perf_counter() - t0) * 1000.0
    return out


def _log_stats(ls: Any, command: str, uri: str, stats: dict, outcome: str) -> None:
    # planned without the model: no speedup to speak of
    cost = planner_note(stats.get("planner", "")) or (
        f"prompt {stats.get('prompt_tokens')} tokens ({stats.get('prompt_reused', 0)} cached), "
        f"{stats.get('copied_tokens')} tokens copied, {stats.get('decoded_tokens')} generated, "
        f"speedup ~{stats.get('speedup_estimate', 1.0):.2f}x")
    if stats.get("picked"):   # strategy auto: what it ran
        cost += f", auto picked {stats['picked']}"
    ls.log(f"{command} {uri}: {stats['server_ms']:.0f} ms (engine {stats['engine_ms'] or 0:.0f} ms, "
           f"queued {stats['queue_ms']:.0f} ms), {cost}; {outcome}")
