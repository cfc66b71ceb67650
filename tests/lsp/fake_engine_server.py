"""The REAL cad-lsp server (``cad_lsp.server.build_server`` + its stdio transport) with an instant,
deterministic stand-in for ``engine.api.EditEngine``, for protocol tests that must not wait for a model.

Run as ``python -m tests.lsp.fake_engine_server``. Everything except the engine is the product:
framing, protocol rules, document sync, commands, progress, cancellation, applyEdit.

The fake engine's edit appends one line ``# edited: <instruction>`` to the edited text. An
instruction starting with ``slow`` decodes for ``FAKE_STEPS`` (env, default 400) steps of ``FAKE_STEP_S`` (default 0.025) s,
checking the cancel event before each "forward" and reporting progress, like the real decoder.
The instruction ``crash`` raises ``RuntimeError`` (an engine bug); ``nothing`` is a model edit that
changes nothing. Like the real tokenizer, it refuses text that is not valid Unicode (lone surrogates) with the
tokenizer's own ``TypeError``.
"""
from __future__ import annotations

import logging
import os
import sys
import time

from engine.api import EditCancelled, EditResult, EditStats, Progress
from engine.program.oracle import line_program
from engine.program.resolver import resolve


class FakeEngine:
    loaded = True

    def load(self) -> None:
        pass

    def edit(self, request, *, cancel=None, progress=None) -> EditResult:
        for text in (request.document, request.instruction):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise TypeError("TextEncodeInput must be Union[TextInputSequence, "
                                "Tuple[InputSequence, InputSequence]]") from None
        if request.instruction == "crash":
            raise RuntimeError("an engine bug")
        t0 = time.perf_counter()
        steps = int(os.environ.get("FAKE_STEPS", "400")) if request.instruction.startswith("slow") else 1
        for step in range(steps):
            if cancel is not None and cancel.is_set():
                raise EditCancelled(f"edit cancelled after {step} forwards")
            if progress is not None:
                progress(Progress(decoded=step, copied=0, forced=0, forwards=step, ops=0))
            if steps > 1:
                time.sleep(float(os.environ.get("FAKE_STEP_S", "0.025")))
        lines = request.document.split("\n")
        first, last = request.line_range or (1, len(lines) - (1 if len(lines) > 1 and lines[-1] == "" else 0))
        if request.instruction != "nothing":
            lines.insert(last, f"# edited: {request.instruction}")
        new = "\n".join(lines)
        program = line_program(request.document, new)
        assert resolve(program, request.document, "clipped").text == new
        stats = EditStats(decoded_tokens=steps, copied_tokens=0, forced_tokens=0, forwards=steps, ops=len(program),
                          prompt_tokens=0, wall_ms=(time.perf_counter() - t0) * 1000.0, budget=512)
        return EditResult(program=program, text=new, stats=stats, warnings=[])


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("FAKE_LOG_LEVEL", "WARNING"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from cad_lsp.server import build_server

    server = build_server(engine_factory=lambda model, device, on_status: FakeEngine())
    server.start_io()


if __name__ == "__main__":
    main()
