"""The REAL cad-lsp server (``cad_lsp.__main__`` → ``build_server``, its stdio transport, commands,
versioned apply, rebase, preview cache) with a deterministic stand-in for the model, so editor
clients can be tested against the product's server contract in seconds.

Run: ``python tests/editors/fake_engine_lsp.py [cad-lsp options]``. The engine upper-cases the
edited lines (the command's range, else the whole document) when the instruction contains
``upper``; ``unsure`` gives the edit confidence 0.2 (``stats.confidence``); ``slow`` makes it take ``$FAKE_STEPS`` (default 60) steps of 50 ms, reporting progress
and stopping at cancellation like the real decoder. Each decode appends one line to
``$FAKE_ENGINE_LOG`` (if set), so tests can count decodes.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.api import EditCancelled, EditResult, EditStats, Progress  # noqa: E402
from engine.program.oracle import line_program  # noqa: E402


class UpperEngine:
    loaded = True

    def load(self) -> None:
        pass

    def edit(self, request, *, cancel=None, progress=None) -> EditResult:
        log = os.environ.get("FAKE_ENGINE_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{request.instruction}\n")
        t0 = time.perf_counter()
        steps = int(os.environ.get("FAKE_STEPS", "60")) if "slow" in request.instruction else 2
        for step in range(steps):
            if cancel is not None and cancel.is_set():
                raise EditCancelled(f"edit cancelled after {step} forwards")
            if progress is not None:
                progress(Progress(decoded=step, copied=0, forced=0, forwards=step, ops=0))
            time.sleep(0.05 if steps > 2 else 0.0)
        lines = request.document.split("\n")
        first, last = request.line_range or (1, len(lines))
        if "upper" in request.instruction:
            for i in range(first - 1, last):
                lines[i] = lines[i].upper()
        new = "\n".join(lines)
        program = line_program(request.document, new)
        stats = EditStats(decoded_tokens=steps, copied_tokens=0, forced_tokens=0, forwards=steps, ops=len(program),
                          prompt_tokens=0, wall_ms=(time.perf_counter() - t0) * 1000.0, budget=512,
                          confidence=0.2 if "unsure" in request.instruction else 0.9)
        return EditResult(program=program, text=new, stats=stats, warnings=[])


def main() -> int:
    import cad_lsp.server as server_module
    from cad_lsp.__main__ import main as cad_main

    real_build = server_module.build_server
    server_module.build_server = lambda *a, **k: real_build(*a, **{**k, "engine_factory": lambda *_: UpperEngine()})
    return cad_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
