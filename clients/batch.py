"""`cad-apply`: headless batch apply of edit instructions to files.

Owns the command line and the per-job loop: read file → (resume check) → edit via the in-process
engine or the LSP server → print a unified diff (`--diff`, default) or write in place atomically
(`--write`) → journal. Pieces live in small helpers: clients.jobs (job list, --root check),
clients.line_endings (CRLF / final newline), clients.atomic_write (temp+fsync+rename),
clients.journal (resume), clients.edit_backends (engine / LSP), clients.progress_bar,
clients.batch_report (per-job status and the summary table).
"""
from __future__ import annotations

import argparse
import difflib
import json
import signal
import sys
import time
from pathlib import Path

from clients.atomic_write import (
    ChangedOnDiskError, ReadOnlyFileError, atomic_replace, clean_stale_temp_files, content_hash, is_read_only,
)
from clients.batch_report import JobReport, relative, summary
from clients.fanout import LockedJournal, PerThread, run_fanout, throughput
from clients.edit_backends import (BackendError, BackendStartError, InProcessBackend, LspBackend,
                                   load_backend_factory)
from clients.jobs import Job, JobsFileError, OutsideRootError, confine, read_jobs_file
from clients.journal import JOURNAL_NAME, Journal
from clients.line_endings import NotTextError, decode, encode
from clients.patch_jobs import PatchJobsError, jobs_from_patch, read_patch
from clients.progress_bar import ProgressBar
from engine.program.breakage import breakage_message, find_breakage
from engine.program.placeholders import find_lazy_placeholders, refusal_message
from engine.api import DEFAULT_GEN_DRAFTER, DRAFTERS, STRATEGIES  # the engine's registries (torch-free import)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_START = 4
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

EPILOG = f"""\
exit codes:
  {EXIT_OK}    every job succeeded (changed, unchanged, or skipped as already done)
  {EXIT_FAILED}    at least one edit failed (engine/server error, bad range)
  {EXIT_USAGE}    bad command line or unreadable/malformed jobs file
  {EXIT_REFUSED}    no failures, but at least one job was refused (outside --root, not a file,
       binary or not UTF-8, read-only, the file changed on disk while its edit was computed,
       or --write and a new "... existing code ..." placeholder line would replace code:
       see --allow-placeholders), or at least one
       edit is "truncated": its program hit the token budget, so the result is incomplete
       (with --write it is not written unless --allow-truncated is given)
  {EXIT_START}    the model or the LSP server could not be started
  {EXIT_SIGINT}  interrupted by Ctrl-C ({EXIT_SIGTERM} for SIGTERM); finished files are complete,
       the rest untouched; rerun the same command to resume

jobs file: one JSON object per line, {{"path": ..., "instruction": ..., "range": [start, end]}}
(range optional, 1-based inclusive lines; relative paths are relative to the jobs file).
--write journals finished jobs in {JOURNAL_NAME} (beside the jobs file, else in --root);
a rerun skips jobs whose file still holds (or descends from) the journaled result.
"""


class Interrupted(BaseException):
    """SIGTERM arrived; unwinds like KeyboardInterrupt so temp files are removed."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cad-apply", description="Apply an edit instruction to files with the Copy-as-Decode engine.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", type=Path, metavar="FILE", help="files to edit (with -i)")
    p.add_argument("-i", "--instruction", help="the edit instruction for FILE arguments")
    p.add_argument("--range", dest="line_range", metavar="START-END",
                   help="only edit these lines (1-based, inclusive) of each FILE")
    p.add_argument("--jobs", type=Path, help="jobs.jsonl with one {path, instruction, range?} per line")
    p.add_argument("--patch", metavar="PATCH", help="a diff (a .diff file, a saved chat answer, - for stdin): edit "
                                                    "each file it names with the part that fits, exactly; no model")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print unified diffs, change nothing (default)")
    mode.add_argument("--write", action="store_true", help="write edits in place, atomically")
    p.add_argument("--allow-truncated", action="store_true",
                   help="with --write, also write results whose program hit --max-new-tokens (refused by default)")
    p.add_argument("--allow-read-only", action="store_true",
                   help="with --write, also replace read-only files (refused by default; the mode is kept)")
    p.add_argument("--allow-placeholders", action="store_true",
                   help="with --write, also write results where a new '... existing code ...' line replaces code")
    p.add_argument("--root", type=Path, default=None, help="refuse paths outside this directory (default: cwd)")
    p.add_argument("--no-resume", action="store_true", help="ignore the journal; redo every job")
    p.add_argument("--journal", type=Path, help=f"journal path (default: {JOURNAL_NAME} beside --jobs, else in --root)")
    p.add_argument("--strategy", default="cad", choices=STRATEGIES, help="engine strategy (default: cad)")
    p.add_argument("--gen-drafter", default=DEFAULT_GEN_DRAFTER, choices=DRAFTERS,
                   help=f"speculative drafter of cad gen bodies (lossless: same edit, fewer forwards; "
                        f"default: {DEFAULT_GEN_DRAFTER})")
    p.add_argument("--no-snippet-merge", dest="snippet_merge", action="store_false",
                   help="always decode, even when the instruction carries a pasted change that pins down the new text (a diff, SEARCH/REPLACE blocks, a snippet that anchors at one place)")
    p.add_argument("--model", default="default", help="model spec: default, an HF dir, or a .gguf path")
    p.add_argument("--max-new-tokens", type=_budget, default=None, metavar="N|auto",
                   help="decode budget per edit (default: auto = the edited text's tokens + a margin)")
    p.add_argument("--device", default="auto", help="in-process engine device: auto, cpu, cuda (default: auto)")
    p.add_argument("--via-lsp", action="store_true", help="edit through the LSP server (spawns `python -m cad_lsp`)")
    p.add_argument("--server-cmd", help="server command line for --via-lsp (default: this python -m cad_lsp)")
    p.add_argument("--engine-factory", metavar="MODULE:CALLABLE",
                   help="use CALLABLE(args) as the edit backend instead of the engine (tests, plugins)")
    p.add_argument("--concurrency", type=int, default=1, metavar="N",
                   help="keep N edits in flight (needs a server model: --model http://HOST:PORT/v1)")
    p.add_argument("--json", dest="json_path", type=Path, help="also write the per-job report as JSON here")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return p


def _budget(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}")
    return value


def _parse_range(text: str | None, parser: argparse.ArgumentParser) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        a, b = (int(x) for x in text.replace(":", "-").split("-", 1))
    except ValueError:
        parser.error(f"--range {text!r}: expected START-END, e.g. --range 10-25")
    if a < 1 or b < a:
        parser.error(f"--range {text!r}: need 1 <= START <= END (1-based, inclusive)")
    return (a, b)


def _make_backend(args, progress: ProgressBar):
    if args.engine_factory:
        return load_backend_factory(args.engine_factory)(args)
    if args.via_lsp:
        import shlex
        command = shlex.split(args.server_cmd) if args.server_cmd else None
        settings = {"cad": {"model": args.model, "device": args.device, "maxNewTokens": args.max_new_tokens,
                            "strategy": args.strategy, "genDrafter": args.gen_drafter,
                            "snippetMerge": args.snippet_merge,
                            "applyTruncated": True}}  # run_job decides
        return LspBackend(command=command, settings=settings, strategy=args.strategy, root=args.root)
    return InProcessBackend(model=args.model, strategy=args.strategy, max_new_tokens=args.max_new_tokens,
                            device=args.device, on_status=progress.message, gen_drafter=args.gen_drafter,
                            snippet_merge=args.snippet_merge)


def _diff(old: str, new: str, label: str) -> str:
    """Unified diff that `patch`/`git apply` accept, including the no-final-newline marker."""
    out = []
    for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{label}", f"b/{label}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def run_job(job: Job, report: JobReport, *, args, root: Path, journal: Journal | None, get_backend) -> None:
    """One job, start to finish; sets report.status/detail. Raises only on interrupt/startup."""
    path = job.path
    if not path.is_file():
        report.status, report.detail = "refused", f"{path}: not a regular file"
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
    broken = find_breakage(text, outcome.text)   # advice only: a user may ask for a change that does this
    if broken is not None:
        warning = breakage_message(broken)
        report.detail = f"{report.detail}; {warning}" if report.detail else warning
        print(f"cad-apply: warning: {path}: {warning}", file=sys.stderr)
    if not args.write:
        diff = _diff(data.decode("utf-8", errors="replace"), new_data.decode("utf-8", errors="replace"), label)
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    root = (args.root or Path.cwd()).resolve()
    args.root = root

    jobs: list[Job] = []
    if args.patch:
        if args.files or args.instruction or args.jobs or not args.snippet_merge:
            parser.error("--patch names its own files and applies the diff itself: no FILE, -i, --jobs or "
                         "--no-snippet-merge with it")
        try:
            patch_jobs, skipped = jobs_from_patch(read_patch(args.patch), root)
        except (OSError, UnicodeDecodeError, PatchJobsError) as exc:
            print(f"cad-apply: --patch {args.patch}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        for name in skipped:
            print(f"cad-apply: skipping {name}: the patch creates or deletes it (only existing files are edited)",
                  file=sys.stderr)
        jobs.extend(patch_jobs)
    if args.jobs:
        try:
            jobs.extend(read_jobs_file(args.jobs))
        except JobsFileError as exc:
            print(f"cad-apply: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.files:
        if not args.instruction:
            parser.error("FILE arguments need -i/--instruction")
        rng = _parse_range(args.line_range, parser)
        jobs.extend(Job(f, args.instruction, rng) for f in args.files)
    elif args.instruction and not args.jobs:
        parser.error("-i given but no FILE arguments")
    if not jobs:
        parser.error("nothing to do: give FILE… -i INSTRUCTION, --jobs jobs.jsonl, or --patch PATCH")
    if args.concurrency < 1 or args.concurrency > 64:
        parser.error("--concurrency must be between 1 and 64")
    if args.concurrency > 1 and not (args.engine_factory or str(args.model).startswith(("http://", "https://"))):
        parser.error("--concurrency > 1 needs a serving engine: --model http://HOST:PORT/v1 (an in-process "
                     "model edits one file at a time)")

    reports: list[JobReport] = []
    runnable: list[tuple[Job, JobReport]] = []
    for job in jobs:
        try:
            confined = confine(job, root)
            reports.append(JobReport(confined))
            runnable.append((confined, reports[-1]))
        except OutsideRootError as exc:
            reports.append(JobReport(job, "refused", str(exc)))
            print(f"cad-apply: refused: {exc}", file=sys.stderr)

    journal = None
    if args.write:  # always journal; --no-resume only stops the skipping
        journal = Journal(args.journal or ((args.jobs.resolve().parent if args.jobs else root) / JOURNAL_NAME))
        clean_stale_temp_files(journal.stale_temp_files())  # only what a killed run journaled

    progress = ProgressBar(len(runnable), label="cad-apply", enabled=not args.quiet)
    backend = None

    def get_backend():
        nonlocal backend
        if backend is None:
            backend = _make_backend(args, progress)
        return backend

    def on_sigterm(signum, frame):
        raise Interrupted()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    exit_code: int | None = None
    started = time.monotonic()
    workers = PerThread(lambda: _make_backend(args, progress)) if args.concurrency > 1 else None
    if workers is not None and journal is not None:
        journal = LockedJournal(journal)

    def one(job, report) -> None:
        start = time.monotonic()
        try:
            run_job(job, report, args=args, root=root, journal=journal, get_backend=workers or get_backend)
        except OSError as exc:
            report.status, report.detail = "failed", f"{job.path}: {exc}"
        finally:
            report.seconds = time.monotonic() - start

    def done(job, report) -> None:
        if report.status in ("failed", "refused", "truncated"):  # always shown, even with -q
            note = f"cad-apply: {report.status}: {report.detail}"
            progress.message(note) if progress.enabled else print(note, file=sys.stderr)
        progress.advance(f"{report.status} {relative(job.path, root)}")

    try:
        try:
            if workers is not None:
                run_fanout(runnable, args.concurrency, one, done)
            else:
                for job, report in runnable:
                    one(job, report)
                    done(job, report)
        except BackendStartError as exc:
            for r in reports:
                if r.status == "pending" and r.detail == "":
                    r.status, r.detail = "failed", str(exc)
                    break
            print(f"cad-apply: cannot start the edit backend: {exc}", file=sys.stderr)
            exit_code = EXIT_START
    except KeyboardInterrupt:
        exit_code = EXIT_SIGINT
    except Interrupted:
        exit_code = EXIT_SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
        progress.close()
        for r in reports:
            if r.status == "pending":
                r.status = "not-run"
        errors = workers.close_all() if workers is not None else []
        if backend is not None:
            try:
                backend.close()
            except Exception as exc:  # closing must not hide the real outcome
                errors.append(exc)
        for exc in errors:
            print(f"cad-apply: warning: closing the backend failed: {exc}", file=sys.stderr)

    if not args.quiet:
        print(summary(reports, root), file=sys.stderr)
        print(throughput(reports, time.monotonic() - started), file=sys.stderr)
    if args.json_path:
        args.json_path.write_text(json.dumps([
            {"path": str(r.job.path), "instruction": r.job.instruction,
             "range": list(r.job.line_range) if r.job.line_range else None,
             "status": r.status, "detail": r.detail, "seconds": r.seconds, "stats": r.stats}
            for r in reports], indent=2, default=str) + "\n")
    if exit_code is not None:
        return exit_code
    statuses = {r.status for r in reports}
    if "failed" in statuses:
        return EXIT_FAILED
    if statuses & {"refused", "truncated"}:
        return EXIT_REFUSED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
