"""Engines that answer like a lazy model: the edited body becomes one placeholder line.

``python -m tests.reliability.lazy_engines`` is the REAL cad-lsp server with the instant fake
engine of tests/lsp/fake_engine_server.py, except that an instruction ``lazy:<line>`` replaces
every line but the first and the last of the edited text with ``<line>`` (the code is gone).
``lazy_backend`` is the same for ``cad-apply --engine-factory``.
"""
from __future__ import annotations

import logging
import os
import sys

from clients.edit_backends import EditOutcome
from engine.api import EditResult
from engine.program.oracle import line_program
from tests.lsp.fake_engine_server import FakeEngine


def lazy_text(document: str, placeholder: str) -> str:
    lines = document.split("\n")
    last = len(lines) - 1 if len(lines) > 1 and lines[-1] == "" else len(lines)
    return "\n".join([lines[0], placeholder, *lines[last - 1:]]) if last > 2 else document


class LazyEngine(FakeEngine):
    def edit(self, request, *, cancel=None, progress=None) -> EditResult:
        if not request.instruction.startswith("lazy:"):
            return super().edit(request, cancel=cancel, progress=progress)
        result = super().edit(request._replace(instruction="x") if hasattr(request, "_replace") else request,
                              cancel=cancel, progress=progress)
        new = lazy_text(request.document, request.instruction[len("lazy:"):])
        return EditResult(program=line_program(request.document, new), text=new, stats=result.stats, warnings=[])


class LazyBackend:
    def edit(self, text, instruction, line_range, *, path=None):
        if instruction.startswith("lazy:"):
            return EditOutcome(lazy_text(text, instruction[len("lazy:"):]), {"fake": True})
        return EditOutcome(text + f"# edited: {instruction}\n", {"fake": True})

    def close(self):
        pass


def lazy_backend(args):
    return LazyBackend()


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("FAKE_LOG_LEVEL", "WARNING"))
    from cad_lsp.server import build_server

    build_server(engine_factory=lambda model, device, on_status: LazyEngine()).start_io()


if __name__ == "__main__":
    main()
