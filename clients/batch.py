"""`cad-apply`: headless batch apply of edit instructions to files.

Owns the command line and the loop over jobs; one job (clients.batch_job): read file → (resume
check) → edit via the in-process engine or the LSP server → checks → print a unified diff (`--diff`,
default) or write in place atomically (`--write`) → journal. Pieces live in small helpers:
clients.jobs (job list, --root check), clients.patch_jobs (--patch),
clients.line_endings (CRLF / final newline), clients.atomic_write (temp+fsync+rename),
clients.journal (resume), clients.edit_backends (engine / LSP), clients.progress_bar,
clients.batch_report (per-job status and the summary table).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from clients.atomic_write import clean_stale_temp_files
from clients.batch_job import run_job
from clients.batch_report import JobReport, relative, summary
from clients.fanout import LockedJournal, PerThread, run_fanout, throughput
from clients.edit_backends import BackendStartError, InProcessBackend, LspBackend, load_backend_factory
from clients.jobs import Job, JobsFileError, OutsideRootError, confine, read_jobs_file
from clients.journal import JOURNAL_NAME, Journal
from clients.patch_jobs import PatchJobsError, jobs_from_patch, read_patch
from clients.progress_bar import ProgressBar
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
       see --allow-placeholders, or --write and the edit's confidence is below
       --min-confidence), or at least one
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
    p.add_argument("--min-confidence", type=float, default=0.0, metavar="P",
                   help="with --write, refuse edits whose least sure choice had a probability below P (e.g. 0.4, "
                        "where the engine flags edits; warn without --write); pasted changes and serving engines "
                        "report none and are not held back")
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
    p.add_argument("--draft-model", default=None, metavar="SPEC",
                   help="a smaller model of the same tokenizer drafting for --gen-drafter draft-model (in process)")
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
                            "draftModel": args.draft_model or "",
                            "strategy": args.strategy, "genDrafter": args.gen_drafter,
                            "snippetMerge": args.snippet_merge,
                            "applyTruncated": True}}  # run_job decides
        return LspBackend(command=command, settings=settings, strategy=args.strategy, root=args.root)
    return InProcessBackend(model=args.model, strategy=args.strategy, max_new_tokens=args.max_new_tokens,
                            device=args.device, on_status=progress.message, gen_drafter=args.gen_drafter,
                            snippet_merge=args.snippet_merge, draft_model=args.draft_model)


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
