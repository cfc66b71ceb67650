"""`cad-demo`: edit a sample buggy file with the default model and show program, diff and stats.

    cad-demo [--strategy cad|cad-tokens|regen|spec-edit] [--file PATH] [--instruction TEXT]
             [--max-new-tokens N] [--lines A-B] [--device auto|cpu|cuda]

Defaults to examples/buggy_stats.py with the instruction in examples/buggy_stats.instruction.txt.
Prints the edit program, a unified diff and the stats on stdout; model-load and decoding progress
go to stderr. Exit status: 0 on success, 2 on bad arguments / unreadable input, 1 on engine errors.
"""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from engine.api import MODEL, STRATEGIES, EditEngine, EditRequest, EngineError, Progress

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEFAULT_FILE = EXAMPLES / "buggy_stats.py"


def _parse_lines(text: str) -> tuple[int, int]:
    try:
        a, _, b = text.partition("-")
        return int(a), int(b or a)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--lines wants A-B (1-based, inclusive), got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cad-demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--strategy", choices=STRATEGIES, default="cad")
    p.add_argument("--file", type=Path, default=DEFAULT_FILE, help="document to edit (default: %(default)s)")
    p.add_argument("--instruction", help="edit instruction (default: the file's .instruction.txt)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="decode budget (default: auto)")
    p.add_argument("--lines", type=_parse_lines, help="edit only lines A-B (1-based, inclusive)")
    p.add_argument("--no-snippet-merge", dest="snippet_merge", action="store_false",
                   help="always decode, even when the instruction carries a pasted change that pins down the new text (a diff, SEARCH/REPLACE blocks, a snippet that anchors at one place)")
    p.add_argument("--device", default="auto")
    p.add_argument("--model", default="default", help="model spec: default, an HF dir or a .gguf path")
    return p


def _instruction_for(path: Path) -> str | None:
    side = path.with_suffix(".instruction.txt")
    return side.read_text(encoding="utf-8").strip() if side.is_file() else None


def stats_table(stats) -> str:
    # a pasted change applied without the model decoded nothing: no forward to compare against regeneration
    speedup = "n/a (no decoding)" if stats.planner != MODEL else f"{stats.speedup_estimate:.2f}x"
    rows = [
        ("decoded tokens", stats.decoded_tokens), ("copied tokens", stats.copied_tokens),
        ("forced tokens", stats.forced_tokens), ("forwards", stats.forwards), ("ops", stats.ops),
        ("planner", stats.planner), ("prompt tokens", stats.prompt_tokens), ("wall ms", f"{stats.wall_ms:.0f}"),
        ("truncated", stats.truncated), ("speedup estimate", speedup),
        ("confidence", "n/a" if stats.confidence is None else f"{stats.confidence:.2f}"),
    ]
    if stats.picked:   # strategy auto: what it ran, and the predictions it chose by
        costs = ", ".join(f"{name} {ms:.0f} ms" for name, ms in stats.predicted_ms.items())
        rows.append(("auto picked", stats.picked + (f" (predicted {costs})" if costs else "")))
    return "\n".join(["| stat | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        document = args.file.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"cad-demo: cannot read {args.file}: {exc.strerror}. Pass --file PATH.", file=sys.stderr)
        return 2
    instruction = args.instruction or _instruction_for(args.file)
    if not instruction:
        print(f"cad-demo: no instruction: pass --instruction or create "
              f"{args.file.with_suffix('.instruction.txt')}", file=sys.stderr)
        return 2

    def status(message: str) -> None:
        print(f"[load] {message}", file=sys.stderr, flush=True)

    def progress(p: Progress) -> None:
        if p.forwards == 1 or p.forwards % 10 == 0:
            print(f"[decode] forwards={p.forwards} decoded={p.decoded} copied={p.copied} "
                  f"forced={p.forced} ops={p.ops}", file=sys.stderr, flush=True)

    engine = EditEngine(args.model, args.device, on_status=status)
    request = EditRequest(document, instruction, strategy=args.strategy, line_range=args.lines,
                          max_new_tokens=args.max_new_tokens, snippet_merge=args.snippet_merge)
    try:
        engine.load()
        result = engine.edit(request, progress=progress)
    except EngineError as exc:
        print(f"cad-demo: {exc}", file=sys.stderr)
        return 1
    from engine.program.grammar import serialize

    diff = difflib.unified_diff(document.splitlines(keepends=True), result.text.splitlines(keepends=True),
                                fromfile=f"a/{args.file.name}", tofile=f"b/{args.file.name}")
    print(f"# cad-demo: {args.strategy} on {args.file.name}: {instruction}\n")
    print("## Program\n")
    print(serialize(result.program))
    print("\n## Diff\n")
    print("".join(diff) or "(no change)")
    print("## Stats\n")
    print(stats_table(result.stats))
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
