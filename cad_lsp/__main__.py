"""``cad-lsp`` / ``python -m cad_lsp``: start the Copy-as-Decode language server.

stdio by default; ``--tcp HOST:PORT`` for debugging. ``--preload`` loads the model after
``initialized`` instead of at the first edit. ``--model``/``--device``/``--strategy``/
``--max-new-tokens``/``--resolver-mode`` set defaults that ``initializationOptions`` and
``workspace/configuration`` (section ``cad``) may override.
"""
from __future__ import annotations

import argparse
import logging
import sys

from .settings import RESOLVER_MODES, STRATEGIES, Settings

__all__ = ["main", "parse_args"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cad-lsp", description="Copy-as-Decode language server (LSP over stdio)")
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging)")
    p.add_argument("--preload", action="store_true", help="load the model right after initialize")
    p.add_argument("--model", default="default", help="model spec: 'default', a .gguf path or an HF directory")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--strategy", default="cad", choices=STRATEGIES)
    p.add_argument("--max-new-tokens", type=int, default=None, help="decode budget per edit (default: auto)")
    p.add_argument("--resolver-mode", default="clipped", choices=RESOLVER_MODES)
    p.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p.parse_args(argv)


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_ExpectedErrorFilter())
    from .server import build_server

    settings = Settings(model=args.model, device=args.device, strategy=args.strategy,
                        max_new_tokens=args.max_new_tokens, resolver_mode=args.resolver_mode)
    server = build_server(settings, preload=args.preload)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit():
            print(f"cad-lsp: --tcp expects HOST:PORT, got {args.tcp!r}", file=sys.stderr)
            return 2
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
