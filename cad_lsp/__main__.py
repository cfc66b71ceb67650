"""``cad-lsp`` / ``python -m cad_lsp``: start the Copy-as-Decode language server.

Owns the command line and the process-level logging setup:

* transport: ``--stdio`` (the default; accepted explicitly because LSP clients such as
  vscode-languageclient append it) or ``--tcp HOST:PORT`` for debugging. Other transport flags
  that clients may append (``--node-ipc``, ``--pipe``, ``--socket``) are refused with a message;
  ``--clientProcessId=N`` is accepted and ignored (the client owns our stdio anyway).
* ``--version`` prints ``cad-lsp <version>`` and exits; ``--log-file PATH`` sends the log
  there instead of stderr (appended, one line per record).
* model-loading progress bars (tqdm in transformers/gguf/huggingface_hub) are disabled unless
  stderr is a terminal, and Python warnings from libraries are logged at INFO: editors log every
  stderr line of a language server as an error.
* ``--preload`` loads the model after ``initialized`` instead of at the first edit;
  ``--model``/``--device``/``--strategy``/``--gen-drafter``/``--max-new-tokens``/``--resolver-mode`` set
  defaults that ``initializationOptions`` and ``workspace/configuration`` (section ``cad``)
  may override.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from .settings import DEFAULT_GEN_DRAFTER, DRAFTERS, RESOLVER_MODES, STRATEGIES, Settings

__all__ = ["main", "parse_args", "version"]

PROGRESS_BAR_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def version() -> str:
    """The installed distribution's version (the server's own constant when not installed)."""
    try:
        from importlib.metadata import PackageNotFoundError, version as dist_version

        return dist_version("copy-as-decode")
    except PackageNotFoundError:  # pragma: no cover - running from a plain checkout
        from .server import VERSION

        return VERSION


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cad-lsp", description="Copy-as-Decode language server (LSP over stdio)")
    p.add_argument("--version", action="version", version=f"cad-lsp {version()}")
    transport = p.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="speak LSP over stdin/stdout (the default)")
    transport.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging)")
    for flag in ("--node-ipc", "--pipe", "--socket"):
        transport.add_argument(flag, nargs="?", const=True, default=None, dest=flag[2:].replace("-", "_"),
                               help=argparse.SUPPRESS)
    p.add_argument("--clientProcessId", default=None, help=argparse.SUPPRESS)
    p.add_argument("--preload", action="store_true", help="load the model right after initialize")
    p.add_argument("--model", default="default", help="model spec: 'default', a .gguf path or an HF directory")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--draft-model", default=None, metavar="SPEC",
                   help="a smaller model of the same tokenizer drafting for genDrafter draft-model (setting draftModel)")
    p.add_argument("--strategy", default="cad", choices=STRATEGIES)
    p.add_argument("--gen-drafter", default=DEFAULT_GEN_DRAFTER, choices=DRAFTERS,
                   help=f"speculative drafter of cad gen bodies (lossless; default: {DEFAULT_GEN_DRAFTER})")
    p.add_argument("--no-snippet-merge", dest="snippet_merge", action="store_false",
                   help="always decode, even when the instruction carries a pasted change that pins down the new text (a diff, SEARCH/REPLACE blocks, a snippet that anchors at one place)")
    p.add_argument("--no-warm-on-idle", dest="warm_on_idle", action="store_false",
                   help="do not prefill a document's prompt while it is left unchanged (saves CPU, costs latency)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="decode budget per edit (default: auto)")
    p.add_argument("--resolver-mode", default="clipped", choices=RESOLVER_MODES)
    p.add_argument("--min-confidence", type=float, default=0.0, metavar="P",
                   help="hold changed model edits less sure than P (0-1) for review instead of applying them "
                        "(setting minConfidence; default 0: off)")
    p.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument("--log-file", metavar="PATH", default=None,
                   help="append the server log to PATH instead of stderr")
    args = p.parse_args(argv)
    for name in ("node_ipc", "pipe", "socket"):
        if getattr(args, name) is not None:
            p.error(f"--{name.replace('_', '-')} is not supported: cad-lsp speaks LSP over stdio "
                    "(--stdio, the default) or --tcp HOST:PORT; configure the client for stdio")
    return args


class _ExpectedErrorFilter(logging.Filter):
    """pygls logs every error response with a traceback; ours are expected (bad arguments,
    refused, cancelled, engine errors) and already reach the client, so log one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        from pygls.exceptions import JsonRpcRequestCancelled

        from .errors import CommandArgumentError, CommandRefusedError, EngineCommandError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (CommandArgumentError, CommandRefusedError, EngineCommandError,
                            JsonRpcRequestCancelled)):
            record.msg, record.args = f"{type(exc).__name__}: {exc}", ()
            record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.INFO, "INFO"
            return logging.getLogger().isEnabledFor(logging.INFO)
        return True


class _LibraryWarningFilter(logging.Filter):
    """Python warnings from libraries (FutureWarning, DeprecationWarning …) are not the user's to
    act on; editors would show them as errors. Log them at INFO (seen with --log-level INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.levelno, record.levelname = logging.INFO, "INFO"
        return logging.getLogger().isEnabledFor(logging.INFO)


def _quiet_progress_bars(log_to_terminal: bool) -> None:
    """Turn off library progress bars unless they would land on a terminal (set before the
    engine imports transformers; a user's explicit setting wins)."""
    if log_to_terminal:
        return
    for key, value in PROGRESS_BAR_ENV.items():
        os.environ.setdefault(key, value)


def _configure_logging(args: argparse.Namespace) -> None:
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    if args.log_file:
        handler: logging.Handler = logging.FileHandler(args.log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    logging.basicConfig(level=args.log_level, handlers=[handler], force=True)
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addFilter(_LibraryWarningFilter())
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_ExpectedErrorFilter())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.log_file:
        try:
            open(args.log_file, "a", encoding="utf-8").close()
        except OSError as exc:
            print(f"cad-lsp: cannot write the log file {args.log_file!r}: {exc}", file=sys.stderr)
            return 2
    _quiet_progress_bars(log_to_terminal=not args.log_file and sys.stderr.isatty())
    _configure_logging(args)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit():
            print(f"cad-lsp: --tcp expects HOST:PORT, got {args.tcp!r}", file=sys.stderr)
            return 2
    from .server import build_server

    settings = Settings(model=args.model, device=args.device, draft_model=args.draft_model, strategy=args.strategy,
                        gen_drafter=args.gen_drafter, snippet_merge=args.snippet_merge, warm_on_idle=args.warm_on_idle,
                        max_new_tokens=args.max_new_tokens, resolver_mode=args.resolver_mode)
    try:
        settings, _ = settings.merge({"minConfidence": args.min_confidence}, source="--min-confidence")
    except ValueError as exc:
        print(f"cad-lsp: {exc}", file=sys.stderr)
        return 2
    server = build_server(settings, preload=args.preload)
    logging.getLogger(__name__).info("cad-lsp %s starting (%s)", version(), f"tcp {args.tcp}" if args.tcp else "stdio")
    if args.tcp:
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
