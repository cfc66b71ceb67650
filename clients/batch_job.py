"""One `cad-apply` job, start to finish: read the file, edit it, check the result, print or write it.

``run_job`` sets the job's report (status and detail) and raises only on an interrupt or when the
edit backend cannot start. The checks after an edit, in order: a truncated program (not written
without --allow-truncated), a lazy placeholder standing for deleted code (refused with --write), a
low confidence (below --min-confidence: refused with --write), syntax breakage (a warning), and the
engine's own warnings (printed to stderr and kept in the report).
"""
from __future__ import annotations

import difflib
import sys
from pathlib import Path

from clients.atomic_write import ChangedOnDiskError, ReadOnlyFileError, atomic_replace, content_hash, is_read_only
from clients.batch_report import JobReport, relative
from clients.edit_backends import BackendError, BackendStartError
from clients.jobs import Job
from clients.journal import Journal
from clients.line_endings import NotTextError, decode, encode
from engine.program.breakage import breakage_message, find_breakage
from engine.program.placeholders import find_lazy_placeholders, refusal_message

__all__ = ["run_job"]


def diff_text(old: str, new: str, label: str) -> str:
    """Unified diff that `patch`/`git apply` accept, including the no-final-newline marker."""
    out = []
    for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{label}", f"b/{label}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def run_job(job: Job, report: JobReport, *, args, root: Path, journal: Journal | None, get_backend) -> None:
    """One job, start to finish; sets report.status/detail. Raises only on interrupt/startup."""
    path = job.path
    if not path.is_file():
        what = "no such file (check the path)" if not path.exists() else "not a regular file"
        report.status, report.detail = "refused", f"{path}: {what}"
        return
    if args.write and not args.allow_read_only and is_read_only(path):
        report.status = "refused"
        report.detail = (f"{path}: read-only (mode {path.stat().st_mode & 0o7777:04o}); not edited. Make it "
                         "writable or pass --allow-read-only to replace it anyway")
        return
    data = path.read_bytes()
    before = content_hash(data)
    if journal is not None and not args.no_resume and journal.is_done(job, before):
        report.status, report.detail = "skipped", "already applied (journal)"
        return
    try:
        text, style = decode(data, where=str(path))
    except NotTextError as exc:
        report.status, report.detail = "refused", str(exc)
        return
    n_lines = len(text.split("\n"))
    if job.line_range and job.line_range[1] > n_lines:
        report.status = "failed"
        report.detail = f"{path}: range {job.line_range[0]}-{job.line_range[1]} is past the last line ({n_lines})"
        return
    try:
        outcome = get_backend().edit(text, job.instruction, job.line_range, path=path)
    except BackendStartError:
        raise
    except BackendError as exc:
        report.status, report.detail = "failed", str(exc)
        return
    report.stats = outcome.stats
    new_data = encode(outcome.text, style)
    label = relative(path, root)
    truncated = bool((outcome.stats or {}).get("truncated"))
    if truncated:
        budget = (outcome.stats or {}).get("budget") or args.max_new_tokens
        report.detail = (f"the model hit its token budget{f' ({budget})' if budget else ''} before finishing its edit "
                         "program; the result is incomplete")
    if truncated and args.write and not args.allow_truncated:
        report.status = "truncated"
        report.detail += (": nothing written, because the rest of the file would be lost. Raise "
                          "--max-new-tokens, edit a smaller --range, or pass --allow-truncated")
        return
    lazy = find_lazy_placeholders(text, outcome.text)  # a placeholder standing for deleted code
    if lazy:
        report.detail = refusal_message(lazy, how_to_override="--allow-placeholders writes it anyway")
        if args.write and not args.allow_placeholders:
            report.status = "refused"
            return
        print(f"cad-apply: warning: {path}: {report.detail}", file=sys.stderr)
    confidence = (outcome.stats or {}).get("confidence")
    if args.min_confidence and confidence is not None and confidence < args.min_confidence and outcome.text != text:
        report.detail = (f"low confidence: the model's least sure choice had probability {confidence:.2f}, below "
                         f"--min-confidence {args.min_confidence}")
        if args.write:
            report.status = "refused"
            report.detail += ": nothing written. Review the diff (run without --write) or lower --min-confidence"
            return
        print(f"cad-apply: warning: {path}: {report.detail}", file=sys.stderr)
    for warning in outcome.warnings:             # the engine's own (low confidence, a snippet that did not merge, ...)
        print(f"cad-apply: warning: {path}: {warning}", file=sys.stderr)
    if outcome.warnings and not report.detail:
        report.detail = "; ".join(outcome.warnings)
    broken = find_breakage(text, outcome.text)   # advice only: a user may ask for a change that does this
    if broken is not None:
        warning = breakage_message(broken)
        report.detail = f"{report.detail}; {warning}" if report.detail else warning
        print(f"cad-apply: warning: {path}: {warning}", file=sys.stderr)
    if not args.write:
        diff = diff_text(data.decode("utf-8", errors="replace"), new_data.decode("utf-8", errors="replace"), label)
        if diff:
            sys.stdout.write(diff)
            sys.stdout.flush()
        report.finish(truncated=truncated, changed=new_data != data)
        return
    # Journal first, then rename: a kill between the two leaves the old file with an entry whose
    # "after" hash is not on disk, so the rerun redoes the job; a kill after the rename leaves the
    # new file, whose hash the entry already holds, so the rerun skips it (never applied twice).
    if journal is not None:
        journal.record(job, before, content_hash(new_data))
    if new_data != data:
        try:
            atomic_replace(path, new_data, expected_hash=before, allow_read_only=args.allow_read_only,
                           on_temp=journal.record_temp if journal is not None else None)
        except (ChangedOnDiskError, ReadOnlyFileError) as exc:
            report.status, report.detail = "refused", str(exc)
            return
    report.finish(truncated=truncated, changed=new_data != data)
